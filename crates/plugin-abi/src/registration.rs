//! Link-time registration of plugins compiled into a binary (the optional
//! `inventory` feature).
//!
//! This lives in the ABI crate so that both sides can name the same type
//! without one depending on the other: a plugin crate (through `xplug-sdk`)
//! submits a [`StaticPluginRegistration`], and a host (`xplug-providers`)
//! collects every submission of the final binary with
//! [`registered_plugins`].

use crate::QueryFn;

/// A plugin linked into the binary, registered with [`inventory`].
///
/// Plugin crates (normally through `xplug-sdk`'s `#[plugin]` macro) submit
/// one of these; hosts list them with [`registered_plugins`]
/// (`xplug_providers::static_plugins()` returns them sorted by name).
///
/// ```
/// use core::ffi::c_void;
/// use xplug_abi::{Header, StaticPluginRegistration, Version, registered_plugins};
///
/// unsafe extern "C" fn my_query(_max: Version, _reserved: *mut c_void) -> *mut *const Header {
///     core::ptr::null_mut() // a real plugin returns its v0 table here
/// }
///
/// // SAFETY: `my_query` follows the v0 query contract (it returns NULL, which
/// // every host handles as "needs a newer runtime").
/// xplug_abi::inventory::submit! {
///     unsafe { StaticPluginRegistration::new("doc_plugin", my_query) }
/// }
///
/// fn main() {
///     assert!(registered_plugins().any(|plugin| plugin.name() == "doc_plugin"));
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
    /// return NULL or a pointer to a
    /// valid, immutable v0 table whose header and function pointers obey the
    /// v0 ABI, callable from any thread, for the life of the program.
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

/// Every [`StaticPluginRegistration`] submitted anywhere in the final
/// binary, in no particular order.
///
/// Registrations from a crate that nothing references may be dropped by the
/// linker; reference the plugin crate (for example `use my_plugin as _;`) in
/// the binary to keep them.
pub fn registered_plugins() -> impl Iterator<Item = &'static StaticPluginRegistration> {
    inventory::iter::<StaticPluginRegistration>.into_iter()
}
