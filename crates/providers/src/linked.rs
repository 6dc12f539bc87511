//! Link-time registration of plugins compiled into the binary.
//!
//! The registration type lives in `xplug-abi` (feature `inventory`) so that
//! plugin crates can submit one without depending on this crate; this module
//! lists what was submitted.

pub use xplug_abi::StaticPluginRegistration;

/// Every plugin registered with [`StaticPluginRegistration`] in the final
/// binary, sorted by name so the order is deterministic across builds.
///
/// Registrations from a crate that nothing references may be dropped by the
/// linker; reference the plugin crate (for example `use my_plugin as _;`) in
/// the binary to keep them.
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
/// // SAFETY: `my_query` follows the v0 query contract (it returns NULL, which
/// // every host handles as "needs a newer runtime").
/// xplug_providers::inventory::submit! {
///     unsafe { StaticPluginRegistration::new("doc_plugin", my_query) }
/// }
///
/// fn main() {
///     assert!(static_plugins().iter().any(|plugin| plugin.name() == "doc_plugin"));
/// }
/// ```
#[must_use]
pub fn static_plugins() -> Vec<&'static StaticPluginRegistration> {
    let mut plugins: Vec<_> = xplug_abi::registered_plugins().collect();
    plugins.sort_by_key(|registration| registration.name());
    plugins
}
