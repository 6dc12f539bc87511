//! Import providers for IREE executable imports.
//!
//! An executable declares imports by name; an [`ImportProvider`] fills a
//! [`ResolveRequest`] (names plus function and context slots) with what it
//! exports, following IREE's resolution rules (SPEC §2). This crate holds the
//! trait and request types, and link-time registration of static plugins
//! ([`StaticPluginRegistration`]); `xplug-manager` composes providers.

mod error;
mod fn_table;
mod host_alloc;
mod params;
mod plugin;
mod provider;
mod registry;
mod request;
mod static_plugin;
mod system_library;

pub use error::Error;
pub use fn_table::{FnTableEntry, FnTableProvider};
pub use host_alloc::AllocationStats;
pub use params::LoadParams;
pub use plugin::{HOST_SANITIZER, Plugin, PluginInfo, PluginSource};
pub use provider::ImportProvider;
pub use registry::{StaticPluginRegistration, static_plugins};
pub use request::{ResolveRequest, SymbolName};
pub use static_plugin::StaticPlugin;
pub use system_library::SystemLibraryPlugin;

pub use xplug_abi as abi;

/// The `inventory` crate, re-exported so plugin crates can submit a
/// [`StaticPluginRegistration`] without depending on it themselves.
pub use inventory;
