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
///
/// Loading a registered plugin calls its query function and then its v0
/// functions, which safe code cannot vet; the trust is placed where the
/// registration is made, in the `unsafe` constructor [`Self::new`].
#[derive(Clone, Copy, Debug)]
pub struct StaticPluginRegistration {
    name: &'static str,
    query: QueryFn,
}

impl StaticPluginRegistration {
    /// Registers `query` under `name`.
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/abi.md#query`):
    /// return NULL
    /// or a pointer to a valid, immutable v0 table whose header and function
    /// pointers obey the v0 ABI, callable from any thread, for the life of
    /// the program.
    #[must_use]
    pub const unsafe fn new(name: &'static str, query: QueryFn) -> Self {
        Self { name, query }
    }

    /// The plugin's name (for diagnostics and ordering).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The registered query function; see [`Self::new`] for what it promises.
    #[must_use]
    pub const fn query(&self) -> QueryFn {
        self.query
    }
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
