//! The manager as a C import provider (IREE's
//! `iree_hal_executable_import_provider_t`).

use std::ffi::{c_char, c_void};
use std::marker::PhantomData;

use xplug_providers::ResolveRequest;
use xplug_providers::abi::{Resolution, Status, StatusCode};

use crate::Manager;

/// IREE's `iree_hal_executable_import_provider_resolve_fn_t`:
/// `status resolve(void* self, size_t count, const char* const* symbol_names,
/// void** out_fn_ptrs, void** out_fn_contexts, uint32_t* out_resolution)`.
pub type CResolveFn = unsafe extern "C" fn(
    provider_self: *mut c_void,
    count: usize,
    symbol_names: *const *const c_char,
    out_fn_ptrs: *mut *mut c_void,
    out_fn_contexts: *mut *mut c_void,
    out_resolution: *mut Resolution,
) -> Status;

/// A manager seen as IREE's `iree_hal_executable_import_provider_t`
/// (`{ void* self; resolve }`), to hand to C code that resolves imports.
///
/// The lifetime ties it to the manager: the `self` pointer is only valid
/// while the manager lives, and Rust code cannot keep this struct longer.
/// C code given a copy must likewise stop using it before the manager drops.
///
/// `resolve` follows [`Manager::resolve`]; it returns a bare status code
/// (xplug hosts have no full `iree_status_t`), so error messages are not
/// passed to C; they are logged through `tracing` at `warn` level. It also
/// returns `INVALID_ARGUMENT` for NULL arrays or names when `count > 0`, and
/// `INTERNAL` if Rust code panics (the panic never crosses into C).
/// `out_resolution` may be NULL; when not, it is always written (0 on error).
///
/// ```
/// use std::ffi::c_void;
/// use xplug_manager::Manager;
/// use xplug_manager::providers::abi::{Resolution, StatusCode};
///
/// let manager = Manager::new();
/// let provider = manager.as_c_provider();
/// let names = [c"?optional".as_ptr()];
/// let mut fns = [std::ptr::null_mut::<c_void>()];
/// let mut contexts = [std::ptr::null_mut::<c_void>()];
/// let mut resolution = Resolution::NONE;
/// // SAFETY: the arrays hold one element each and the manager is alive.
/// let status = unsafe {
///     (provider.resolve)(provider.self_, 1, names.as_ptr(), fns.as_mut_ptr(), contexts.as_mut_ptr(), &mut resolution)
/// };
/// assert_eq!(status.code(), StatusCode::OK);
/// assert_eq!(resolution, Resolution::MISSING_OPTIONAL);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CImportProvider<'manager> {
    /// The `self` argument for `resolve`: the manager.
    pub self_: *mut c_void,
    /// The resolve function.
    pub resolve: CResolveFn,
    _manager: PhantomData<&'manager Manager>,
}

// Layout is IREE's two-pointer struct; the marker adds nothing.
const _: () = {
    assert!(size_of::<CImportProvider<'static>>() == 2 * size_of::<*mut c_void>());
    assert!(align_of::<CImportProvider<'static>>() == align_of::<*mut c_void>());
    assert!(std::mem::offset_of!(CImportProvider<'static>, resolve) == size_of::<*mut c_void>());
};

impl Manager {
    /// This manager as a C import provider, valid while the manager lives.
    #[must_use]
    pub fn as_c_provider(&self) -> CImportProvider<'_> {
        CImportProvider {
            self_: std::ptr::from_ref(self).cast_mut().cast(),
            resolve: manager_resolve,
            _manager: PhantomData,
        }
    }
}

/// The C entry point behind [`CImportProvider::resolve`].
///
/// # Safety
/// `provider_self` is the pointer from [`Manager::as_c_provider`] of a live
/// manager; when `count > 0`, the three arrays hold `count` elements, every
/// name is a NUL-terminated string, and no one else touches the slots
/// during the call; `out_resolution` is NULL or writable.
unsafe extern "C" fn manager_resolve(
    provider_self: *mut c_void,
    count: usize,
    symbol_names: *const *const c_char,
    out_fn_ptrs: *mut *mut c_void,
    out_fn_contexts: *mut *mut c_void,
    out_resolution: *mut Resolution,
) -> Status {
    // The closure writes the resolution itself and returns the status, one
    // word: what crosses `catch_unwind` is stored and loaded whole (two
    // narrow stores read back as one wide load would stall every call).
    let answer = |code: StatusCode, resolution: Resolution| {
        if !out_resolution.is_null() {
            // SAFETY: the caller passes NULL or a writable `uint32_t`.
            unsafe { out_resolution.write(resolution) };
        }
        Status::from_code(code)
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if provider_self.is_null() {
            return answer(StatusCode::INVALID_ARGUMENT, Resolution::NONE);
        }
        // SAFETY: the caller passes `count` name pointers and slots, used by
        // no one else during the call; NULLs are what is checked.
        let request =
            unsafe { ResolveRequest::from_c_arrays(count, symbol_names, out_fn_ptrs, out_fn_contexts) };
        let mut request = match request {
            Ok(request) => request,
            Err(error) => return answer(refused(count, &error), Resolution::NONE),
        };
        // SAFETY: `provider_self` came from `as_c_provider` on a manager the
        // caller keeps alive for the call.
        let manager = unsafe { &*provider_self.cast::<Manager>().cast_const() };
        match manager.resolve(&mut request) {
            Ok(resolution) => answer(StatusCode::OK, resolution),
            Err(error) => answer(failed(&error), Resolution::NONE),
        }
    }));
    outcome.unwrap_or_else(|_| answer(StatusCode::INTERNAL, Resolution::NONE))
}

/// Logs a C resolve refused for its arguments; its status code.
#[cold]
#[inline(never)]
fn refused(count: usize, error: &xplug_providers::Error) -> StatusCode {
    tracing::warn!(count, %error, "C resolve refused");
    StatusCode::INVALID_ARGUMENT
}

/// Logs a failed C resolve; its status code.
#[cold]
#[inline(never)]
fn failed(error: &crate::Error) -> StatusCode {
    tracing::warn!(%error, "import resolution failed");
    error.code()
}
