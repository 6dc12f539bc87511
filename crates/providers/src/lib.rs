//! Import providers for IREE executable imports.
//!
//! **Not built yet.** This crate will hold the `ImportProvider` trait, a
//! provider over a Rust function table, and the v0 plugin wrapper that loads
//! static and shared-library plugins with every check of SPEC §3. It currently
//! only re-exports [`xplug_abi`].
pub use xplug_abi as abi;
