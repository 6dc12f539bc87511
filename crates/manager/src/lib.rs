//! The xplug plugin manager.
//!
//! **Not built yet.** This crate will compose import providers and plugins in
//! IREE's scan order (newest first) with lock-free resolution. It currently
//! only re-exports `xplug-providers`.
pub use xplug_providers as providers;
