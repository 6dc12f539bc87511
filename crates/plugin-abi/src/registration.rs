//! Link-time registration of plugins compiled into a binary (the optional
//! `inventory` feature).
//!
//! This lives in the ABI crate so that both sides can name the same type
//! without one depending on the other: a plugin crate (through `xplug-sdk`)
//! submits a [`StaticPluginRegistration`], and a host (`xplug-providers`)
//! collects every submission of the final binary with
//! [`registered_plugins`].

use core::ffi::CStr;

use crate::{
    EXPORTS_LIST_NAME, ExportsListFn, IMPORT_LAYOUTS_NAME, ImportLayoutsFn, LOAD_ERROR_NAME, LoadErrorFn,
    PARAM_DECLS_NAME, ParamDeclsFn, QueryFn,
};

/// What a shared library's optional exports
/// ([`OPTIONAL_EXPORTS`](crate::OPTIONAL_EXPORTS)) give, for a plugin linked
/// into the binary, which has no symbol table to find them in: its export
/// list, declared load parameters, import layouts and the message of its
/// last refused `load`. Each is optional, as the exports are; a host reads
/// them exactly as it reads the exports of a library
/// (`docs/src/reference/abi.md#optional-exports-of-linked-in-plugins`).
///
/// Attached to a registration with
/// [`StaticPluginRegistration::with_optional_exports`]; `xplug-sdk`'s
/// `#[plugin]` fills every field its shared library would export. Code
/// written by hand names the fields it sets and takes the rest from
/// [`Self::NONE`] (`..LinkedOptionalExports::NONE`), so a later optional
/// export does not break it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkedOptionalExports {
    /// What `xplug_plugin_exports` would be.
    pub exports: Option<ExportsListFn>,
    /// What `xplug_plugin_params` would be (only for a plugin that declares
    /// its parameters: one with the list refuses any other key).
    pub params: Option<ParamDeclsFn>,
    /// What `xplug_import_layouts` would be.
    pub import_layouts: Option<ImportLayoutsFn>,
    /// What `xplug_plugin_load_error` would be.
    pub load_error: Option<LoadErrorFn>,
}

impl LinkedOptionalExports {
    /// None of the optional exports: what a registration made with
    /// [`StaticPluginRegistration::new`] alone carries.
    pub const NONE: Self = Self { exports: None, params: None, import_layouts: None, load_error: None };

    /// The function standing for the optional export `name` (one of
    /// [`OPTIONAL_EXPORTS`](crate::OPTIONAL_EXPORTS)), as an address, or
    /// `None` when this plugin has no such function or the name is not an
    /// optional export.
    #[must_use]
    pub fn get(&self, name: &CStr) -> Option<*const ()> {
        if name == EXPORTS_LIST_NAME {
            self.exports.map(|function| function as *const ())
        } else if name == PARAM_DECLS_NAME {
            self.params.map(|function| function as *const ())
        } else if name == IMPORT_LAYOUTS_NAME {
            self.import_layouts.map(|function| function as *const ())
        } else if name == LOAD_ERROR_NAME {
            self.load_error.map(|function| function as *const ())
        } else {
            None
        }
    }

    /// True when no field is set.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.exports.is_none()
            && self.params.is_none()
            && self.import_layouts.is_none()
            && self.load_error.is_none()
    }
}

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
    optional: LinkedOptionalExports,
}

impl StaticPluginRegistration {
    /// Registers `query` under `name`.
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/src/reference/abi.md#query`):
    /// return NULL or a pointer to a
    /// valid, immutable v0 table whose header and function pointers obey the
    /// v0 ABI, callable from any thread, for the life of the program.
    #[must_use]
    pub const unsafe fn new(name: &'static str, query: QueryFn) -> Self {
        Self { name, query, optional: LinkedOptionalExports::NONE }
    }

    /// The same registration carrying what the plugin's shared library
    /// would export besides its query function, so a host gives a linked-in
    /// plugin the diagnostics of its `.so` (suggested import names, checked
    /// parameters, its own load-failure message, import layouts).
    ///
    /// ```
    /// use core::ffi::{c_char, c_void};
    /// use xplug_abi::{
    ///     EXPORTS_LIST_NAME, Header, LOAD_ERROR_NAME, LinkedOptionalExports, StaticPluginRegistration, Version,
    ///     registered_plugins,
    /// };
    ///
    /// unsafe extern "C" fn my_query(_max: Version, _reserved: *mut c_void) -> *mut *const Header {
    ///     core::ptr::null_mut() // a real plugin returns its v0 table here
    /// }
    ///
    /// struct Names([*const c_char; 1]);
    /// // SAFETY: one pointer to a static string, never written.
    /// unsafe impl Sync for Names {}
    /// static NAMES: Names = Names([c"my_import".as_ptr()]);
    ///
    /// /// What `xplug_plugin_exports` would return.
    /// unsafe extern "C" fn my_exports(out_count: *mut usize) -> *const *const c_char {
    ///     if !out_count.is_null() {
    ///         // SAFETY: a non-NULL `out_count` is writable (the export's contract).
    ///         unsafe { out_count.write(NAMES.0.len()) };
    ///     }
    ///     NAMES.0.as_ptr()
    /// }
    ///
    /// // SAFETY: `my_query` answers NULL, and `my_exports` keeps the
    /// // `xplug_plugin_exports` contract with static data.
    /// xplug_abi::inventory::submit! {
    ///     unsafe {
    ///         StaticPluginRegistration::new("doc_listed", my_query).with_optional_exports(
    ///             LinkedOptionalExports { exports: Some(my_exports), ..LinkedOptionalExports::NONE },
    ///         )
    ///     }
    /// }
    ///
    /// fn main() {
    ///     let plugin = registered_plugins().find(|plugin| plugin.name() == "doc_listed").unwrap();
    ///     assert!(plugin.optional_exports().get(EXPORTS_LIST_NAME).is_some());
    ///     assert!(plugin.optional_exports().get(LOAD_ERROR_NAME).is_none());
    /// }
    /// ```
    ///
    /// # Safety
    /// Each function set in `optional` must have the contract of the
    /// optional export it stands for (`docs/src/reference/abi.md`, from `#exports-list`; the
    /// function types in this crate), callable from any thread, with what
    /// it returns valid for the life of the program.
    #[must_use]
    pub const unsafe fn with_optional_exports(self, optional: LinkedOptionalExports) -> Self {
        Self { optional, ..self }
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

    /// What the plugin's shared library would export besides its query
    /// function ([`Self::with_optional_exports`]; none by default); see
    /// [`Self::with_optional_exports`] for what each function promises.
    #[must_use]
    pub const fn optional_exports(&self) -> &LinkedOptionalExports {
        &self.optional
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
