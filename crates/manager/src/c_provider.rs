//! The one C boundary of import resolution: IREE's import provider struct
//! (`iree_hal_executable_import_provider_t`, [`CImportProvider`]), its one
//! function type ([`CResolveFn`]), the entry point every Rust resolver is
//! called through (the panic and NULL prologue, the request built from C's
//! arrays, the resolution written back), and the status style of the
//! resolver behind it as a parameter ([`CResolver::refusal`]): a bare
//! status code (the [`Manager`]) or a full `iree_status_t` carrying a
//! message (`xplug-iree`'s provider).
//!
//! A bare code is an `iree_status_t` too: IREE's `iree_status_from_code`
//! is the code in the pointer's low bits, with no payload, which is what
//! [`Status::from_code`] makes. So one function type serves both styles,
//! and nothing converts one function type into another.

use std::ffi::{c_char, c_void};
use std::marker::PhantomData;

use xplug_providers::ResolveRequest;
use xplug_providers::abi::{Resolution, Status, StatusCode};

use crate::Manager;

/// IREE's `iree_hal_executable_import_provider_resolve_fn_t`:
/// `iree_status_t resolve(void* self, size_t count, const char* const*
/// symbol_names, void** out_fn_ptrs, void** out_fn_contexts, uint32_t*
/// out_resolution)`. The returned [`Status`] is IREE's pointer-sized
/// `iree_status_t`: 0 for OK, a bare code, or a full status the caller
/// owns (free it with IREE's `iree_status_free`).
pub type CResolveFn = unsafe extern "C" fn(
    provider_self: *mut c_void,
    count: usize,
    symbol_names: *const *const c_char,
    out_fn_ptrs: *mut *mut c_void,
    out_fn_contexts: *mut *mut c_void,
    out_resolution: *mut Resolution,
) -> Status;

/// A Rust resolver behind a [`CImportProvider`]: what it answers, and in
/// which status style.
///
/// The entry point ([`CImportProvider::new`]) does the rest: it refuses a
/// NULL `self` and malformed arrays, catches panics (none crosses into C),
/// and writes the resolution (0 on error) where C asked for it.
pub trait CResolver: Sync {
    /// Resolves `request`: the resolution, or the status C gets, in this
    /// resolver's style.
    fn resolve_for_c(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Status>;

    /// The status for a call refused before it reached
    /// [`CResolver::resolve_for_c`] (no state, malformed arrays) or for a
    /// panic, with what happened: the resolver's status style. A bare code
    /// cannot carry the message, so a resolver of that style logs it.
    fn refusal(code: StatusCode, message: &str) -> Status;
}

/// An import provider as IREE's C code holds it (`{ void* self; resolve
/// }`), tied to what `self` points at by `'provider`: Rust code cannot keep
/// it longer, and C code given a copy must likewise stop using it before
/// its owner drops.
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
pub struct CImportProvider<'provider> {
    /// The `self` argument for `resolve`.
    pub self_: *mut c_void,
    /// The resolve function.
    pub resolve: CResolveFn,
    _provider: PhantomData<&'provider ()>,
}

// Layout is IREE's two-pointer struct; the marker adds nothing.
const _: () = {
    assert!(size_of::<CImportProvider<'static>>() == 2 * size_of::<*mut c_void>());
    assert!(align_of::<CImportProvider<'static>>() == align_of::<*mut c_void>());
    assert!(std::mem::offset_of!(CImportProvider<'static>, resolve) == size_of::<*mut c_void>());
};

impl<'provider> CImportProvider<'provider> {
    /// `resolver` as a C provider, through the one entry point.
    #[must_use]
    pub fn new<R: CResolver>(resolver: &'provider R) -> Self {
        Self {
            self_: std::ptr::from_ref(resolver).cast_mut().cast(),
            resolve: c_resolve::<R>,
            _provider: PhantomData,
        }
    }

    /// A pair made by C code (IREE's own manager), valid for `'provider`.
    ///
    /// # Safety
    /// `resolve` follows IREE's resolve contract for `self_`, which stays
    /// valid for `'provider`.
    #[must_use]
    pub unsafe fn from_raw_parts(self_: *mut c_void, resolve: CResolveFn) -> Self {
        Self { self_, resolve, _provider: PhantomData }
    }
}

impl Manager {
    /// This manager as a C import provider, valid while the manager lives.
    ///
    /// `resolve` follows [`Manager::resolve`] and answers bare status codes
    /// (xplug's own hosts have no full `iree_status_t`): error messages are
    /// not passed to C, they are logged through `tracing` at `warn` level.
    /// It returns `INVALID_ARGUMENT` for NULL arrays or names when
    /// `count > 0`, and `INTERNAL` if Rust code panics. `out_resolution`
    /// may be NULL; when not, it is always written (0 on error).
    #[must_use]
    pub fn as_c_provider(&self) -> CImportProvider<'_> {
        CImportProvider::new(self)
    }
}

/// The manager answers bare codes.
impl CResolver for Manager {
    #[inline(always)]
    fn resolve_for_c(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Status> {
        self.resolve(request).map_err(|error| Status::from_code(failed(&error)))
    }

    #[cold]
    #[inline(never)]
    fn refusal(code: StatusCode, message: &str) -> Status {
        tracing::warn!(%code, "C resolve refused: {message}");
        Status::from_code(code)
    }
}

/// The C entry point behind every [`CImportProvider::new`].
///
/// # Safety
/// `provider_self` is NULL or the pointer [`CImportProvider::new`] made
/// from a live `R`; when `count > 0`, the three arrays hold `count`
/// elements, every name is a NUL-terminated string, and no one else
/// touches the slots during the call; `out_resolution` is NULL or writable.
unsafe extern "C" fn c_resolve<R: CResolver>(
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
    let answer = |outcome: Result<Resolution, Status>| {
        let (resolution, status) = match outcome {
            Ok(resolution) => (resolution, Status::OK),
            Err(status) => (Resolution::NONE, status),
        };
        if !out_resolution.is_null() {
            // SAFETY: the caller passes NULL (checked) or a writable word.
            unsafe { out_resolution.write(resolution) };
        }
        status
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if provider_self.is_null() {
            return answer(Err(R::refusal(
                StatusCode::INVALID_ARGUMENT,
                "import provider called without its state",
            )));
        }
        // SAFETY: the caller passes `count` name pointers and slots, used by
        // no one else during the call; NULLs are what is checked.
        let request =
            unsafe { ResolveRequest::from_c_arrays(count, symbol_names, out_fn_ptrs, out_fn_contexts) };
        let mut request = match request {
            Ok(request) => request,
            Err(error) => return answer(Err(refused::<R>(&error))),
        };
        // SAFETY: `provider_self` came from `CImportProvider::new` on an `R`
        // the caller keeps alive for the call.
        let resolver = unsafe { &*provider_self.cast::<R>().cast_const() };
        answer(resolver.resolve_for_c(&mut request))
    }));
    outcome.unwrap_or_else(|_| {
        answer(Err(R::refusal(StatusCode::INTERNAL, "xplug's import provider panicked while resolving")))
    })
}

/// The refusal of a request whose arrays are malformed.
#[cold]
#[inline(never)]
fn refused<R: CResolver>(error: &xplug_providers::Error) -> Status {
    R::refusal(StatusCode::INVALID_ARGUMENT, &error.to_string())
}

/// Logs a failed C resolve; its status code.
#[cold]
#[inline(never)]
fn failed(error: &crate::Error) -> StatusCode {
    tracing::warn!(%error, "import resolution failed");
    error.code()
}
