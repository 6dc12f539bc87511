//! A loaded plugin instance: `resolve`, and `unload` exactly once.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use xplug_abi::{Resolution, ResolveParamsV0, Status, StatusCode, UnloadFnV0};

use super::Stage;
use crate::{AllocationStats, CountingAllocator, ResolveRequest};

/// The inner (non-NULL) type of a v0 `resolve` pointer.
pub(crate) type ResolveFn =
    unsafe extern "C" fn(*mut c_void, *const ResolveParamsV0, *mut Resolution) -> Status;

/// A plugin instance whose `load` succeeded, from [`super::RawTable::load`].
///
/// `unload` runs exactly once: in [`RawInstance::unload`] or when the
/// instance is dropped. The host allocator handed to `load` stays alive
/// until the instance is gone.
///
/// # Thread-safety
/// `Send` and `Sync`: the v0 ABI requires `resolve` to be callable from any
/// thread, concurrently, and `unload` from whichever thread drops the
/// instance.
pub struct RawInstance<'code> {
    resolve: ResolveFn,
    unload: UnloadFnV0,
    state: *mut c_void,
    unloaded: bool,
    allocator: Arc<CountingAllocator>,
    _code: PhantomData<&'code ()>,
}

// SAFETY: the raw pointers are the plugin's state and functions; the v0 ABI
// makes `resolve` callable from any thread, concurrently, and `unload` from
// any thread; the allocator counters are atomics.
unsafe impl Send for RawInstance<'_> {}
// SAFETY: `&RawInstance` only allows `resolve` (thread-safe per the ABI) and
// reads of atomic counters.
unsafe impl Sync for RawInstance<'_> {}

impl std::fmt::Debug for RawInstance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawInstance")
            .field("state", &self.state)
            .field("unloaded", &self.unloaded)
            .field("allocation_stats", &self.allocator.stats())
            .finish_non_exhaustive()
    }
}

impl RawInstance<'_> {
    pub(super) fn new(
        resolve: ResolveFn,
        unload: UnloadFnV0,
        state: *mut c_void,
        allocator: Arc<CountingAllocator>,
    ) -> Self {
        Self { resolve, unload, state, unloaded: false, allocator, _code: PhantomData }
    }

    /// Calls the plugin's `resolve` on `request` and returns its status
    /// code and resolution bits as the plugin gave them (nothing judged:
    /// [`crate::Plugin`] judges from the slots). An empty request is
    /// passed on too.
    #[inline]
    pub fn resolve(&self, request: &mut ResolveRequest<'_>) -> (StatusCode, Resolution) {
        let params = request.params_for_call();
        let mut resolution = Resolution::NONE;
        super::stage::enter(Stage::Resolve);
        // SAFETY: `state` is the live state of this instance's successful
        // `load` (not yet unloaded: `&self` exists and unloading takes
        // `self` or happens in drop); `params` is the request's own v0
        // struct, whose arrays are each `count` long and borrowed for the
        // call; `resolution` is a valid out-pointer; the code is mapped for
        // `'code`.
        let status = unsafe { (self.resolve)(self.state, params, &mut resolution) };
        (status.code(), resolution)
    }

    /// The state pointer the plugin's `load` produced.
    #[must_use]
    pub fn state(&self) -> *mut c_void {
        self.state
    }

    /// The counters of the host allocator given to `load`.
    #[must_use]
    pub fn allocation_stats(&self) -> AllocationStats {
        self.allocator.stats()
    }

    /// Calls `unload` now and returns what the plugin still holds from the
    /// host allocator afterwards (anything live is a leak).
    pub fn unload(mut self) -> AllocationStats {
        self.unload_in_place();
        self.allocator.stats()
    }

    /// Calls `unload` unless it already ran; true when it ran now.
    pub(crate) fn unload_in_place(&mut self) -> bool {
        if std::mem::replace(&mut self.unloaded, true) {
            return false;
        }
        if let Some(unload) = self.unload {
            super::stage::enter(Stage::Unload);
            // SAFETY: `state` is from this instance's successful `load`;
            // `unload` runs once (guarded by `unloaded`) while the code and
            // the allocator are alive.
            unsafe { unload(self.state) };
        }
        self.state = std::ptr::null_mut();
        true
    }
}

impl Drop for RawInstance<'_> {
    fn drop(&mut self) {
        self.unload_in_place();
    }
}
