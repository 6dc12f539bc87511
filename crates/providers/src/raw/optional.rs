//! xplug's optional exports ([`xplug_abi::OPTIONAL_EXPORTS`]), read the
//! same way from a shared library (the OS loader's symbol table) and from
//! a mapped `.sos` (the symbols `xplug-elf` recorded while validating).
//!
//! An FFI-edge module: it calls the plugin's export functions and copies
//! what they return. Each reader bounds the counts it is given before
//! building a slice.

use std::ffi::{CStr, c_char};

use xplug_abi::{
    EXPORTS_LIST_NAME, ExportsListFn, FieldLayout, IMPORT_LAYOUTS_NAME, ImportLayout, ImportLayoutsFn,
    LOAD_ERROR_NAME, LoadErrorFn, PARAM_DECLS_NAME, ParamDecl, ParamDeclsFn,
};
use xplug_elf::ElfImage;

/// More names than any real plugin exports: a larger count from
/// `xplug_plugin_exports` is garbage and the list is ignored.
pub const MAX_LISTED_EXPORTS: usize = 1 << 20;

/// More load parameters than any real plugin declares: a larger count from
/// `xplug_plugin_params` is garbage and the declaration is ignored.
pub const MAX_PARAM_DECLS: usize = 1 << 12;

/// One load parameter a plugin declares through `xplug_plugin_params`,
/// copied out of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamDeclInfo {
    /// The key.
    pub name: String,
    /// The value's type as the plugin names it (`f32`, `str`, ...).
    pub kind: String,
    /// The value used when the key is absent, if any.
    pub default: Option<String>,
    /// What the parameter does.
    pub description: String,
}

/// Code that may carry xplug's optional exports: a [`RawLibrary`](super::RawLibrary)
/// or a mapped [`ElfImage`]. The provided methods read each export the
/// same way whatever loaded the code; a new optional export gets its
/// reader here (and its name in [`xplug_abi::OPTIONAL_EXPORTS`]).
///
/// # Safety
/// [`OptionalExports::optional_export`] returns only addresses of
/// functions with the type and contract `xplug-abi` gives the export of
/// that name, valid while `self` is borrowed (what the opener of the code
/// vouched for, plus the implementation's own checks that the address is
/// code).
pub unsafe trait OptionalExports {
    /// The address of the optional export `name` when the code defines it
    /// as a function.
    fn optional_export(&self, name: &CStr) -> Option<*const ()>;

    /// The import names listed by `xplug_plugin_exports` (every
    /// `xplug-sdk` plugin has it), copied; `None` when there is no such
    /// export, it returns NULL, or claims more than [`MAX_LISTED_EXPORTS`]
    /// names. NULL entries are skipped.
    fn exports(&self) -> Option<Vec<String>> {
        let address = self.optional_export(EXPORTS_LIST_NAME)?;
        // SAFETY: the trait's contract: a function of `ExportsListFn`'s
        // type (pointer-sized function pointers both).
        let list = unsafe { std::mem::transmute::<*const (), ExportsListFn>(address) };
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let names = unsafe { list(&mut count) };
        if names.is_null() || count > MAX_LISTED_EXPORTS {
            return None;
        }
        // SAFETY: the export returned `count` name pointers valid while the
        // code is loaded (`self` is borrowed for this call).
        let names = unsafe { std::slice::from_raw_parts(names, count) };
        Some(
            names
                .iter()
                .filter(|name| !name.is_null())
                // SAFETY: each non-NULL entry is a NUL-terminated string of
                // the plugin's (the export's contract).
                .map(|&name| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
                .collect(),
        )
    }

    /// The load parameters declared by `xplug_plugin_params`, copied;
    /// `None` when there is no such export, it returns NULL with a non-zero
    /// count, or claims more than [`MAX_PARAM_DECLS`]. Entries without
    /// a name are skipped. A plugin with the export refuses keys it does
    /// not declare.
    fn param_decls(&self) -> Option<Vec<ParamDeclInfo>> {
        let address = self.optional_export(PARAM_DECLS_NAME)?;
        // SAFETY: the trait's contract: a function of `ParamDeclsFn`'s type.
        let list = unsafe { std::mem::transmute::<*const (), ParamDeclsFn>(address) };
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let decls = unsafe { list(&mut count) };
        if count == 0 {
            return Some(Vec::new());
        }
        if decls.is_null() || count > MAX_PARAM_DECLS {
            return None;
        }
        // SAFETY: the export returned `count` declarations valid while the
        // code is loaded (`self` is borrowed for this call).
        let decls: &[ParamDecl] = unsafe { std::slice::from_raw_parts(decls, count) };
        let text = |pointer: *const c_char| {
            // SAFETY: each non-NULL field is a NUL-terminated string of the
            // plugin's (the export's contract).
            (!pointer.is_null()).then(|| unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
        };
        Some(
            decls
                .iter()
                .filter_map(|decl| {
                    Some(ParamDeclInfo {
                        name: text(decl.name)?,
                        kind: text(decl.kind).unwrap_or_default(),
                        default: text(decl.default_value),
                        description: text(decl.description).unwrap_or_default(),
                    })
                })
                .collect(),
        )
    }

    /// The message of the plugin's last refused `load`, through
    /// `xplug_plugin_load_error` (an `xplug-sdk` plugin keeps it; a
    /// standalone one without `std` keeps the latest in the process);
    /// `None` when there is no such export or no message.
    fn load_error(&self) -> Option<String> {
        let address = self.optional_export(LOAD_ERROR_NAME)?;
        // SAFETY: the trait's contract: a function of `LoadErrorFn`'s type.
        let function = unsafe { std::mem::transmute::<*const (), LoadErrorFn>(address) };
        // SAFETY: the export's contract: no arguments, any thread.
        let message = unsafe { function() };
        // SAFETY: non-NULL: a NUL-terminated string of the plugin's, valid
        // until the next `load` (none runs meanwhile).
        (!message.is_null()).then(|| unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned())
    }

    /// The args layout of each import the plugin describes through
    /// `xplug_import_layouts`, copied; `None` when there is no such export,
    /// it returns NULL with a non-zero count, or claims more than
    /// [`MAX_IMPORT_LAYOUTS`]. Bounds as in [`ImportLayoutInfo`]: a field
    /// outside its struct drops the field list, keeping the size.
    fn import_layouts(&self) -> Option<Vec<ImportLayoutInfo>> {
        let address = self.optional_export(IMPORT_LAYOUTS_NAME)?;
        // SAFETY: the trait's contract: a function of `ImportLayoutsFn`'s
        // type.
        let list = unsafe { std::mem::transmute::<*const (), ImportLayoutsFn>(address) };
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let layouts = unsafe { list(&mut count) };
        if count != 0 && (layouts.is_null() || count > MAX_IMPORT_LAYOUTS) {
            return None;
        }
        // SAFETY: the export returned `count` layouts valid while the code
        // is loaded (`self` is borrowed for this call), with the contract
        // of `xplug_import_layouts`.
        Some(unsafe { copy_import_layouts(layouts, count) })
    }
}

// SAFETY: `ElfImage::optional_export` returns only addresses inside an
// executable segment of the mapped image, for symbols of the names in
// `OPTIONAL_EXPORTS`, valid while the image lives; that each is the export
// xplug-abi describes is the promise made when the image was trusted
// (`EmbeddedElfLoader::open_image`, `RawQuery::from_elf_image`).
unsafe impl OptionalExports for ElfImage {
    fn optional_export(&self, name: &CStr) -> Option<*const ()> {
        ElfImage::optional_export(self, name)
    }
}

/// More imports than any real plugin describes: a larger count from
/// `xplug_import_layouts` is garbage and the description is ignored.
pub const MAX_IMPORT_LAYOUTS: usize = 1 << 20;

/// More fields than any real args struct has: an import claiming more
/// through `xplug_import_layouts` is listed with its size only.
pub const MAX_LAYOUT_FIELDS: usize = 1 << 12;

/// The args struct of one import, as the plugin describes it through
/// `xplug_import_layouts`, copied out of the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportLayoutInfo {
    /// The import's name, without `?`.
    pub symbol: String,
    /// The args struct's name, when the plugin gives it.
    pub type_name: Option<String>,
    /// `sizeof` the args struct, in bytes.
    pub size: usize,
    /// Its alignment, in bytes.
    pub align: usize,
    /// Its fields in declaration order; `None` when the plugin knows only
    /// the size (an args type without xplug's derive).
    pub fields: Option<Vec<FieldInfo>>,
}

/// One field of an [`ImportLayoutInfo`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: String,
    /// Its type as the plugin's source spells it (`f32`, `Buffer<f32>`).
    pub type_name: String,
    /// Its offset in the struct, in bytes.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
}

/// Copies the layouts a plugin's `xplug_import_layouts` returned: entries
/// without a symbol are skipped; an entry whose fields pointer is NULL, or
/// whose fields claim more than [`MAX_LAYOUT_FIELDS`] or lie outside its
/// size, keeps its size only.
///
/// # Safety
/// `layouts` points at `count` readable [`ImportLayout`]s whose non-NULL
/// strings are NUL-terminated and whose non-NULL `fields` point at
/// `field_count` readable [`FieldLayout`]s, all valid for this call.
pub(crate) unsafe fn copy_import_layouts(
    layouts: *const ImportLayout,
    count: usize,
) -> Vec<ImportLayoutInfo> {
    if count == 0 || layouts.is_null() {
        return Vec::new();
    }
    let text = |pointer: *const std::ffi::c_char| {
        // SAFETY: each non-NULL string is NUL-terminated (the caller's
        // promise).
        (!pointer.is_null()).then(|| unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
    };
    // SAFETY: `count` readable entries (the caller's promise).
    let layouts: &[ImportLayout] = unsafe { std::slice::from_raw_parts(layouts, count) };
    layouts
        .iter()
        .filter_map(|layout| {
            let symbol = text(layout.symbol)?;
            let fields = (!layout.fields.is_null() && layout.field_count <= MAX_LAYOUT_FIELDS)
                .then(|| {
                    // SAFETY: `field_count` readable fields (the caller's
                    // promise), bounded above.
                    let fields: &[FieldLayout] =
                        unsafe { std::slice::from_raw_parts(layout.fields, layout.field_count) };
                    fields
                        .iter()
                        .map(|field| {
                            field.offset.checked_add(field.size).filter(|end| *end <= layout.size)?;
                            Some(FieldInfo {
                                name: text(field.name)?,
                                type_name: text(field.type_name).unwrap_or_default(),
                                offset: field.offset,
                                size: field.size,
                            })
                        })
                        .collect::<Option<Vec<_>>>()
                })
                .flatten();
            Some(ImportLayoutInfo {
                symbol,
                type_name: text(layout.type_name),
                size: layout.size,
                align: layout.align,
                fields,
            })
        })
        .collect()
}
