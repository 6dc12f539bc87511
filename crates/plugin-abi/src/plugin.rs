//! The v0 plugin table, its environment and the query entry point.

use core::ffi::{CStr, c_char, c_void};

use crate::{Allocator, Header, Status, StringPair, Version};

/// Name of the function a shared-library plugin exports (C linkage).
pub const EXPORT_NAME: &CStr = c"iree_hal_executable_plugin_query";

/// The object section in which xplug's linked build (`xplug build
/// --object`) records each kernel: its symbol, then its MLIR parameters,
/// each NUL-terminated. `xplug-sdk` writes it, `xplug-build` reads it; no
/// code refers to it, so IREE's linker drops it.
pub const LINKED_SECTION: &str = ".xplug.linked";

/// Name of xplug's optional extra export listing a plugin's import names
/// (see [`ExportsListFn`]); hosts that do not know it ignore it.
pub const EXPORTS_LIST_NAME: &CStr = c"xplug_plugin_exports";

/// xplug's optional extra export: the plugin's import names for tools.
///
/// Returns an array of the names (NUL-terminated, without `?`, sorted by
/// byte value) that lives as long as the library is loaded, and writes its
/// length to `*out_count` when `out_count` is not NULL. C name:
/// `xplug_plugin_exports_fn_t`.
pub type ExportsListFn = unsafe extern "C" fn(out_count: *mut usize) -> *const *const c_char;

/// Name of xplug's optional extra export declaring a plugin's load
/// parameters (see [`ParamDeclsFn`]); hosts that do not know it ignore it.
pub const PARAM_DECLS_NAME: &CStr = c"xplug_plugin_params";

/// One load parameter a plugin declares (an element of the array
/// [`ParamDeclsFn`] returns). C name: `xplug_param_decl_t`.
///
/// Every field is a NUL-terminated string owned by the plugin, valid while
/// it is loaded; only `default_value` may be NULL (no default).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ParamDecl {
    /// The key, as passed in `key=value`.
    pub name: *const c_char,
    /// The value's type: `str`, `bool`, `i32`, `i64`, `u32`, `u64`,
    /// `usize`, `f32` or `f64` (a host shows other names as they are).
    pub kind: *const c_char,
    /// The value used when the key is absent, as text; NULL for none.
    pub default_value: *const c_char,
    /// What the parameter does, for people.
    pub description: *const c_char,
}

/// xplug's optional extra export: the load parameters a plugin accepts.
///
/// Returns an array of `*out_count` [`ParamDecl`]s that lives as long as
/// the library is loaded (or NULL with a count of 0), writing the count
/// when `out_count` is not NULL. A plugin that has this export refuses any
/// key it does not list; an empty list means it takes no parameters. C
/// name: `xplug_param_decls_fn_t`.
pub type ParamDeclsFn = unsafe extern "C" fn(out_count: *mut usize) -> *const ParamDecl;

/// Name of xplug's optional extra export describing the args struct of
/// each import (see [`ImportLayoutsFn`]); hosts that do not know it ignore
/// it.
pub const IMPORT_LAYOUTS_NAME: &CStr = c"xplug_import_layouts";

/// One field of an import's args struct, as [`ImportLayout::fields`]
/// lists it. C name: `xplug_field_layout_t`.
///
/// The strings are NUL-terminated, owned by the plugin and valid while it
/// is loaded.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FieldLayout {
    /// The field's name (`_0`, `_1`, ... for a tuple struct).
    pub name: *const c_char,
    /// The field's type as the plugin's source spells it (`f32`,
    /// `Buffer<f32>`, `*mut u8`, `[u32; 3]`).
    pub type_name: *const c_char,
    /// Its offset in the struct, in bytes.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
}

/// The args struct one import takes (an element of the array
/// [`ImportLayoutsFn`] returns). C name: `xplug_import_layout_t`.
///
/// `size` and `align` are always given; `fields` may be NULL (with a
/// `field_count` of 0) when the plugin knows the struct's size but not its
/// fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ImportLayout {
    /// The import's name, without `?`, as `resolve` matches it.
    pub symbol: *const c_char,
    /// The args struct's name as the plugin's source spells it.
    pub type_name: *const c_char,
    /// `sizeof` the args struct: the bytes the import reads and writes
    /// through its `args` argument.
    pub size: usize,
    /// Its alignment in bytes.
    pub align: usize,
    /// The number of entries `fields` points at.
    pub field_count: usize,
    /// The fields in declaration order, or NULL.
    pub fields: *const FieldLayout,
}

/// xplug's optional extra export: the args layout of each import, for
/// tools that call imports by hand (`xplug call`).
///
/// Returns an array of `*out_count` [`ImportLayout`]s, sorted by symbol,
/// that lives as long as the library is loaded (or NULL with a count of
/// 0), writing the count when `out_count` is not NULL. An import the array
/// does not list has an unknown layout. C name:
/// `xplug_import_layouts_fn_t`.
pub type ImportLayoutsFn = unsafe extern "C" fn(out_count: *mut usize) -> *const ImportLayout;

/// Name of xplug's optional extra export giving the message of a refused
/// `load` (see [`LoadErrorFn`]); hosts that do not know it ignore it.
pub const LOAD_ERROR_NAME: &CStr = c"xplug_plugin_load_error";

/// Every optional export xplug reads from a plugin besides the query
/// function, looked up by the OS loader for a shared library and by
/// xplug's embedded-ELF loader for a `.sos` (which records each one it
/// finds; `.sos` builds keep them global with the version-script patterns
/// `xplug_plugin_*` and `xplug_import_*`). A new optional export is added
/// here, and both loaders find it.
pub const OPTIONAL_EXPORTS: [&CStr; 4] =
    [EXPORTS_LIST_NAME, PARAM_DECLS_NAME, LOAD_ERROR_NAME, IMPORT_LAYOUTS_NAME];

/// xplug's optional extra export: why the last `load` on the calling thread
/// failed, as a NUL-terminated message owned by the plugin (valid until the
/// next `load` on that thread), or NULL when it did not fail or the plugin
/// keeps no message. (An `xplug-sdk` plugin built without `std`, such as a
/// `.sos`, keeps the latest message of the process instead.) The v0 ABI returns only a status code from `load`;
/// this lets a host show the plugin's own explanation. C name:
/// `xplug_plugin_load_error_fn_t`.
pub type LoadErrorFn = unsafe extern "C" fn() -> *const c_char;

/// The function a plugin exports to be discovered.
///
/// C name: `iree_hal_executable_plugin_query_fn_t`.
///
/// Returns a pointer to the plugin's version table (for v0 a [`PluginV0`],
/// whose first field is the header pointer), or NULL when the lowest version
/// the plugin supports is above `max_version`.
pub type QueryFn = unsafe extern "C" fn(max_version: Version, reserved: *mut c_void) -> *mut *const Header;

/// What the host gives a plugin at load time.
///
/// C name: `iree_hal_executable_plugin_environment_v0_t`.
///
/// Valid only during `load`: a plugin copies the allocator value it keeps.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnvironmentV0 {
    /// The allocator the plugin uses for everything it allocates.
    pub host_allocator: Allocator,
}

/// Bits describing how a resolve went.
///
/// C name: `iree_hal_executable_plugin_resolution_t`.
///
/// `Debug` and `Display` name the bits (`MISSING_OPTIONAL`, unknown bits in
/// hex, `NONE` for none):
///
/// ```
/// use xplug_abi::Resolution;
/// assert_eq!(Resolution::MISSING_OPTIONAL.to_string(), "MISSING_OPTIONAL");
/// assert_eq!(format!("{:?}", Resolution(0b11)), "Resolution(MISSING_OPTIONAL | 0x2)");
/// assert_eq!(Resolution::NONE.to_string(), "NONE");
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Resolution(pub u32);

// The C spelling of these constants is in the header prelude.
/// cbindgen:ignore
impl Resolution {
    /// No bits set.
    pub const NONE: Self = Self(0);
    /// At least one optional (`?`) import was left unresolved.
    pub const MISSING_OPTIONAL: Self = Self(1 << 0);

    /// True when every bit of `other` is set in `self`.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The names of the known bits set, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [(Self::MISSING_OPTIONAL, "MISSING_OPTIONAL")]
            .into_iter()
            .filter(move |(bit, _)| self.contains(*bit))
            .map(|(_, name)| name)
    }

    /// The bits set that this crate has no name for.
    #[must_use]
    pub const fn unknown(self) -> Self {
        Self(self.0 & !Self::MISSING_OPTIONAL.0)
    }
}

impl core::fmt::Display for Resolution {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut first = true;
        for name in self.names() {
            if !first {
                f.write_str(" | ")?;
            }
            f.write_str(name)?;
            first = false;
        }
        if self.unknown().0 != 0 {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{:#x}", self.unknown().0)?;
            first = false;
        }
        if first {
            f.write_str("NONE")?;
        }
        Ok(())
    }
}

impl core::fmt::Debug for Resolution {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Resolution({self})")
    }
}

/// Arguments of a resolve call.
///
/// C name: `iree_hal_executable_plugin_resolve_params_v0_t`.
///
/// `symbol_names`, `out_fn_ptrs` and `out_fn_contexts` each point at `count`
/// elements.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ResolveParamsV0 {
    /// Number of names (and of slots in each output array).
    pub count: usize,
    /// NUL-terminated import names, optionally prefixed with `?`.
    pub symbol_names: *const *const c_char,
    /// Function slots: NULL ones are to be filled, others left untouched.
    pub out_fn_ptrs: *mut *mut c_void,
    /// Context slots, written alongside each function slot filled.
    pub out_fn_contexts: *mut *mut c_void,
}

/// `load` creates plugin state from the environment and parameters.
///
/// Nullable, as it comes from foreign tables.
pub type LoadFnV0 = Option<
    unsafe extern "C" fn(
        environment: *const EnvironmentV0,
        param_count: usize,
        params: *const StringPair,
        out_self: *mut *mut c_void,
    ) -> Status,
>;

/// `unload` releases the state `load` produced.
///
/// Nullable, as it comes from foreign tables.
pub type UnloadFnV0 = Option<unsafe extern "C" fn(plugin_self: *mut c_void)>;

/// `resolve` fills import slots.
///
/// C name: `iree_hal_executable_plugin_resolve_fn_v0_t`; nullable.
pub type ResolveFnV0 = Option<
    unsafe extern "C" fn(
        plugin_self: *mut c_void,
        params: *const ResolveParamsV0,
        out_resolution: *mut Resolution,
    ) -> Status,
>;

/// The v0 interface table, read-only and normally a `static` in the plugin.
///
/// C name: `iree_hal_executable_plugin_v0_t`.
///
/// The function pointers are nullable (`Option`s) because foreign code may
/// leave them NULL; a host must check before calling.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PluginV0 {
    /// The plugin's header.
    pub header: *const Header,
    /// Creates the plugin state.
    pub load: LoadFnV0,
    /// Destroys the plugin state.
    pub unload: UnloadFnV0,
    /// Resolves imports.
    pub resolve: ResolveFnV0,
}

// SAFETY: `PluginV0` is an immutable table of a header pointer and function
// pointers; the v0 ABI requires plugins to accept calls from any thread.
unsafe impl Sync for PluginV0 {}
// SAFETY: as above; no ownership moves with the values.
unsafe impl Send for PluginV0 {}
