//! Link-time registration of plugins compiled into the binary.

use xplug_abi::QueryFn;

/// A plugin linked into the binary, registered with [`inventory`].
///
/// Plugin crates (normally through `xplug-sdk`'s macro) submit one of these;
/// [`static_plugins`] lists them and the manager's `with_static_plugins()`
/// loads them before any dynamic plugin, so dynamic ones override them.
///
/// ```
/// use std::ffi::c_void;
/// use xplug_providers::abi::{Header, Version};
/// use xplug_providers::{StaticPluginRegistration, static_plugins};
///
/// unsafe extern "C" fn my_query(_max: Version, _reserved: *mut c_void) -> *mut *const Header {
///     std::ptr::null_mut() // a real plugin returns its v0 table here
/// }
///
/// xplug_providers::inventory::submit! {
///     StaticPluginRegistration { name: "doc_plugin", query: my_query }
/// }
///
/// assert!(static_plugins().iter().any(|plugin| plugin.name == "doc_plugin"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct StaticPluginRegistration {
    /// The plugin's name (for diagnostics and ordering).
    pub name: &'static str,
    /// Its query function.
    pub query: QueryFn,
}

inventory::collect!(StaticPluginRegistration);

/// Every plugin registered with [`StaticPluginRegistration`] in the final
/// binary, sorted by name so the order is deterministic across builds.
///
/// Registrations from a crate that nothing references may be dropped by the
/// linker; reference the plugin crate (for example `use my_plugin as _;`) in
/// the binary to keep them.
#[must_use]
pub fn static_plugins() -> Vec<&'static StaticPluginRegistration> {
    let mut plugins: Vec<_> = inventory::iter::<StaticPluginRegistration>.into_iter().collect();
    plugins.sort_by_key(|registration| registration.name);
    plugins
}
