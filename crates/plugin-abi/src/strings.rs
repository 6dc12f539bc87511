//! Length-delimited strings used for load-time parameters.

use core::ffi::c_char;

/// A borrowed byte string that is **not** NUL-terminated
/// (`iree_hal_executable_plugin_string_view_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StringView {
    /// First byte; may be NULL when `size` is 0.
    pub data: *const c_char,
    /// Length in bytes.
    pub size: usize,
}

impl StringView {
    /// A view of `bytes`, valid for as long as `bytes` is.
    #[must_use]
    pub const fn from_bytes(bytes: &[u8]) -> Self {
        Self { data: bytes.as_ptr().cast(), size: bytes.len() }
    }

    /// The empty view.
    pub const EMPTY: Self = Self { data: core::ptr::null(), size: 0 };
}

/// A key/value parameter passed to `load`
/// (`iree_hal_executable_plugin_string_pair_t`; C code may also call the
/// fields `first` and `second`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StringPair {
    /// The key (C aliases: `key`, `first`).
    pub key: StringView,
    /// The value (C aliases: `value`, `second`).
    pub value: StringView,
}
