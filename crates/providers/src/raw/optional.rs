//! xplug's optional exports ([`xplug_abi::OPTIONAL_EXPORTS`]), read the
//! same way from a shared library (the OS loader's symbol table) and from
//! a mapped `.sos` (the symbols `xplug-elf` recorded while validating).
//!
//! An FFI-edge module: it calls the plugin's export functions and copies
//! what they return. Each reader bounds the counts it is given before
//! building a slice.

use std::ffi::{CStr, c_char};

use xplug_abi::{
    EXPORTS_LIST_NAME, ExportsListFn, LOAD_ERROR_NAME, LoadErrorFn, PARAMS_LIST_NAME, ParamDecl, ParamsListFn,
};
use xplug_elf::ElfImage;

/// More names than any real plugin exports: a larger count from
/// `xplug_plugin_exports` is garbage and the list is ignored.
pub const MAX_LISTED_EXPORTS: usize = 1 << 20;

/// More load parameters than any real plugin declares: a larger count from
/// `xplug_plugin_params` is garbage and the declaration is ignored.
pub const MAX_DECLARED_PARAMS: usize = 1 << 12;

/// One load parameter a plugin declares through `xplug_plugin_params`,
/// copied out of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
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
    /// count, or claims more than [`MAX_DECLARED_PARAMS`]. Entries without
    /// a name are skipped. A plugin with the export refuses keys it does
    /// not declare.
    fn params(&self) -> Option<Vec<ParamInfo>> {
        let address = self.optional_export(PARAMS_LIST_NAME)?;
        // SAFETY: the trait's contract: a function of `ParamsListFn`'s type.
        let list = unsafe { std::mem::transmute::<*const (), ParamsListFn>(address) };
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let decls = unsafe { list(&mut count) };
        if count == 0 {
            return Some(Vec::new());
        }
        if decls.is_null() || count > MAX_DECLARED_PARAMS {
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
                    Some(ParamInfo {
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
}

// SAFETY: `ElfImage::optional_export` returns only addresses inside an
// executable segment of the mapped image, for symbols of the names in
// `OPTIONAL_EXPORTS`, valid while the image lives; that each is the export
// xplug-abi describes is the promise made when the image was trusted
// (`Plugin::load_embedded_elf_image`, `RawQuery::from_elf_image`).
unsafe impl OptionalExports for ElfImage {
    fn optional_export(&self, name: &CStr) -> Option<*const ()> {
        ElfImage::optional_export(self, name)
    }
}
