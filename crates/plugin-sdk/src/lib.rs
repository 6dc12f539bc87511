//! Write IREE executable import plugins in safe Rust.
//!
//! **Not built yet.** This crate will hold the plugin author's side of xplug:
//! a `#[plugin]`-style macro (from `xplug-sdk-macros`) that generates the v0
//! header, the `extern "C"` entry points and a sorted-table resolver from
//! ordinary Rust functions. Until then it only re-exports [`xplug_abi`] so
//! authors can already name the ABI types.
pub use xplug_abi as abi;
