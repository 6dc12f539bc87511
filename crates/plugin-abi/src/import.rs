//! Import functions and import-name conventions.

use core::ffi::{CStr, c_int, c_void};

/// An imported function as an executable calls it; 0 is success.
///
/// C shape: `int fn(void* args, void* context, void* reserved)`.
pub type ImportFn =
    unsafe extern "C" fn(args: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int;

/// The import function behind a resolved function slot, or `None` for NULL.
///
/// `resolve` fills `void*` slots (see [`crate::ResolveParamsV0`]); this turns
/// one back into something callable, the one conversion every host and test
/// makes after resolving.
///
/// ```
/// use core::ffi::{c_int, c_void};
/// use xplug_abi::{ImportFn, import_fn_from_ptr};
///
/// unsafe extern "C" fn answer(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
///     // SAFETY: the caller below passes an `i32`.
///     unsafe { *args.cast::<i32>() = 42 };
///     0
/// }
///
/// let slot = answer as ImportFn as *mut c_void; // what `resolve` writes
/// // SAFETY: `slot` is NULL or an `ImportFn`, as `resolve` promises.
/// let function = unsafe { import_fn_from_ptr(slot) }.expect("resolved");
/// let mut value = 0i32;
/// // SAFETY: `answer` takes an `i32` args block and no context.
/// let code = unsafe { function((&raw mut value).cast(), core::ptr::null_mut(), core::ptr::null_mut()) };
/// assert_eq!((code, value), (0, 42));
///
/// // SAFETY: NULL is always accepted.
/// assert!(unsafe { import_fn_from_ptr(core::ptr::null_mut()) }.is_none());
/// ```
///
/// # Safety
/// `function` must be NULL or the address of a function with the
/// [`ImportFn`] signature and C calling convention (as a conforming
/// `resolve` writes), that stays callable while the result is used.
#[must_use]
pub unsafe fn import_fn_from_ptr(function: *mut c_void) -> Option<ImportFn> {
    if function.is_null() {
        return None;
    }
    // SAFETY: `function` is non-NULL and, per the caller's contract, the
    // address of an `ImportFn`; data and function pointers have the same
    // size and representation on every target this ABI supports (the C ABI
    // itself stores functions in `void*` slots).
    Some(unsafe { core::mem::transmute::<*mut c_void, ImportFn>(function) })
}

/// A thunk through which a runtime calls imports.
///
/// It lets a runtime switch stacks or add instrumentation:
/// `int thunk(fn, args, context, reserved)`.
pub type ImportThunkFn = unsafe extern "C" fn(
    function: ImportFn,
    args: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int;

/// True when an import name starts with `?`, marking it optional.
///
/// ```
/// assert!(xplug_abi::is_optional(c"?fast_path"));
/// assert!(!xplug_abi::is_optional(c"simple_mul_workgroup"));
/// ```
#[must_use]
pub const fn is_optional(name: &CStr) -> bool {
    is_optional_bytes(name.to_bytes())
}

/// [`is_optional`] over the bytes of a name without its NUL.
#[must_use]
pub const fn is_optional_bytes(name: &[u8]) -> bool {
    matches!(name.first(), Some(b'?'))
}

/// The name a provider should look up: `name` without its leading `?`, if any.
///
/// ```
/// assert_eq!(xplug_abi::strip_optional(c"?fast_path"), c"fast_path");
/// assert_eq!(xplug_abi::strip_optional(c"plain"), c"plain");
/// ```
#[must_use]
pub fn strip_optional(name: &CStr) -> &CStr {
    let bytes = name.to_bytes_with_nul();
    if bytes[0] == b'?' {
        match CStr::from_bytes_with_nul(&bytes[1..]) {
            Ok(bare) => bare,
            // Unreachable: a suffix of a C string that still ends in its NUL
            // and contains no earlier NUL is a C string.
            Err(_) => name,
        }
    } else {
        name
    }
}

/// [`strip_optional`] over bytes without a NUL.
///
/// ```
/// assert_eq!(xplug_abi::bare_name(b"?x"), b"x");
/// ```
#[must_use]
pub const fn bare_name(name: &[u8]) -> &[u8] {
    match name {
        [b'?', rest @ ..] => rest,
        _ => name,
    }
}
