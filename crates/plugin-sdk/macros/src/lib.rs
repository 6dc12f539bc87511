//! Procedural macros behind `xplug-sdk`.
//!
//! **Not built yet.** This crate will generate, from a plugin author's safe
//! Rust, the v0 header, the `extern "C"` load/unload/resolve/import shims and
//! a resolver over a symbol table sorted at compile time. It currently exports
//! no macro.
