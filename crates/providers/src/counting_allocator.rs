//! The host allocator handed to plugins, with per-plugin accounting.
//!
//! Every block carries a 16-byte prefix holding the requested size, so FREE
//! and REALLOC know the layout to give back to `std::alloc` and the counters
//! know how many bytes went away. Blocks are 16-byte aligned, as the ABI
//! requires.

use std::alloc::Layout;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use xplug_abi::{Allocator, AllocatorAllocParams, AllocatorCommand, Status, StatusCode};

/// Allocation counters of one plugin's host allocator.
///
/// Returned by [`crate::Plugin::allocation_stats`] and
/// [`crate::Plugin::unload`]; after an unload, non-zero live figures are
/// memory the plugin leaked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AllocationStats {
    /// Blocks allocated and not yet freed.
    pub live_allocations: usize,
    /// Bytes (as requested by the plugin) in those blocks.
    pub live_bytes: usize,
    /// Blocks ever allocated (MALLOC, CALLOC, and REALLOC of NULL).
    pub total_allocations: u64,
    /// The highest `live_bytes` ever reached.
    pub peak_bytes: usize,
}

/// Alignment of every block, and size of the prefix that stores its length.
const ALIGN: usize = 16;
const PREFIX: usize = 16;

/// The host allocator handed to plugins: 16-byte aligned blocks from the
/// global allocator, counted per instance.
///
/// Every [`crate::Plugin`] gets its own; a host that drives a v0 plugin by
/// hand (a conformance checker, a custom loader) can use one too, through
/// [`CountingAllocator::abi`]. Its address is the ABI allocator's `self`, so it
/// must outlive every call the plugin makes, `unload` included: keep the
/// `Arc`.
///
/// ```
/// use xplug_providers::CountingAllocator;
///
/// let allocator = CountingAllocator::new();
/// let abi = allocator.abi(); // put this in the plugin's environment
/// assert!(abi.ctl.is_some());
/// assert_eq!(allocator.stats().live_allocations, 0);
/// ```
#[derive(Debug, Default)]
pub struct CountingAllocator {
    live_allocations: AtomicUsize,
    live_bytes: AtomicUsize,
    total_allocations: AtomicU64,
    peak_bytes: AtomicUsize,
}

impl CountingAllocator {
    /// A new allocator with zeroed counters.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> AllocationStats {
        AllocationStats {
            live_allocations: self.live_allocations.load(Ordering::Relaxed),
            live_bytes: self.live_bytes.load(Ordering::Relaxed),
            total_allocations: self.total_allocations.load(Ordering::Relaxed),
            peak_bytes: self.peak_bytes.load(Ordering::Relaxed),
        }
    }

    /// The ABI allocator value to hand to a plugin, whose `self` is this
    /// allocator. Plugins may call it only while this `Arc` (or a clone) is
    /// alive.
    #[must_use]
    pub fn abi(self: &Arc<Self>) -> Allocator {
        Allocator { self_: Arc::as_ptr(self).cast_mut().cast(), ctl: Some(host_allocator_ctl) }
    }

    fn allocated(&self, bytes: usize) {
        self.live_allocations.fetch_add(1, Ordering::Relaxed);
        self.total_allocations.fetch_add(1, Ordering::Relaxed);
        self.grow(bytes);
    }

    fn grow(&self, bytes: usize) {
        let live = self.live_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_bytes.fetch_max(live, Ordering::Relaxed);
    }

    fn shrink(&self, bytes: usize) {
        self.live_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn freed(&self, bytes: usize) {
        self.live_allocations.fetch_sub(1, Ordering::Relaxed);
        self.shrink(bytes);
    }
}

fn layout_for(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(PREFIX)?, ALIGN).ok()
}

/// Allocates a block of `size` bytes; returns the user pointer.
fn allocate(size: usize, zeroed: bool) -> Option<*mut u8> {
    let layout = layout_for(size)?;
    // SAFETY: `layout` has a non-zero size (at least PREFIX bytes).
    let base = unsafe { if zeroed { std::alloc::alloc_zeroed(layout) } else { std::alloc::alloc(layout) } };
    if base.is_null() {
        return None;
    }
    // SAFETY: `base` is a fresh allocation of at least PREFIX (16) bytes
    // aligned to 16, so writing a `usize` at its start and offsetting by
    // PREFIX stay in bounds and aligned.
    unsafe {
        base.cast::<usize>().write(size);
        Some(base.add(PREFIX))
    }
}

/// The base pointer and requested size of a block from [`allocate`].
///
/// # Safety
/// `user` must come from [`allocate`] or [`reallocate`] and not be freed.
unsafe fn block_of(user: *mut u8) -> (*mut u8, usize) {
    // SAFETY: the caller guarantees `user` is PREFIX bytes into a live block
    // whose first `usize` holds its size.
    unsafe {
        let base = user.sub(PREFIX);
        (base, base.cast::<usize>().read())
    }
}

/// Resizes the block at `user` to `size` bytes; `None` leaves it untouched.
///
/// # Safety
/// As [`block_of`].
unsafe fn reallocate(user: *mut u8, size: usize) -> Option<(*mut u8, usize)> {
    let new_layout = layout_for(size)?;
    // SAFETY: forwarded to the caller.
    let (base, old_size) = unsafe { block_of(user) };
    let old_layout = layout_for(old_size)?;
    // SAFETY: `base` was allocated with `old_layout` (same size rule, same
    // alignment); the new size is non-zero and, being a valid `Layout` size,
    // does not overflow `isize` once rounded to the alignment.
    let new_base = unsafe { std::alloc::realloc(base, old_layout, new_layout.size()) };
    if new_base.is_null() {
        return None;
    }
    // SAFETY: `new_base` is a live block of at least PREFIX bytes, 16-aligned.
    unsafe {
        new_base.cast::<usize>().write(size);
        Some((new_base.add(PREFIX), old_size))
    }
}

/// Frees the block at `user`; returns its requested size.
///
/// # Safety
/// As [`block_of`].
unsafe fn release(user: *mut u8) -> usize {
    // SAFETY: forwarded to the caller.
    let (base, size) = unsafe { block_of(user) };
    if let Some(layout) = layout_for(size) {
        // SAFETY: `base` was allocated with exactly this layout.
        unsafe { std::alloc::dealloc(base, layout) };
    }
    size
}

fn code(code: StatusCode) -> Status {
    Status::from_code(code)
}

/// The allocator's `ctl` entry point as plugins call it.
///
/// # Safety
/// Called by plugin code under the v0 allocator contract: `allocator_self` is
/// the pointer from [`CountingAllocator::allocator`] (still alive);
/// `inout_ptr` points to a writable pointer; for MALLOC, CALLOC and REALLOC
/// `params` points to an [`AllocatorAllocParams`]; pointers passed to
/// REALLOC and FREE came from this allocator and were not freed.
unsafe extern "C" fn host_allocator_ctl(
    allocator_self: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    // Nothing below is expected to panic, but no unwind may cross into C.
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: forwarded from this function's contract.
        unsafe { dispatch(allocator_self, command, params, inout_ptr) }
    }))
    .unwrap_or_else(|_| code(StatusCode::INTERNAL))
}

/// # Safety
/// As [`host_allocator_ctl`].
unsafe fn dispatch(
    allocator_self: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    if allocator_self.is_null() || inout_ptr.is_null() {
        return code(StatusCode::INVALID_ARGUMENT);
    }
    // SAFETY: a non-null `self` is the live counters block (contract).
    let counters = unsafe { &*allocator_self.cast::<CountingAllocator>() };
    let requested = || {
        if params.is_null() {
            None
        } else {
            // SAFETY: allocating commands pass a valid `AllocatorAllocParams`
            // (contract); we checked it is not NULL.
            Some(unsafe { params.cast::<AllocatorAllocParams>().read() }.byte_length)
        }
    };
    match command {
        AllocatorCommand::MALLOC | AllocatorCommand::CALLOC => {
            let Some(size) = requested() else { return code(StatusCode::INVALID_ARGUMENT) };
            let Some(user) = allocate(size, command == AllocatorCommand::CALLOC) else {
                return code(StatusCode::RESOURCE_EXHAUSTED);
            };
            counters.allocated(size);
            // SAFETY: `inout_ptr` is non-null and writable (contract).
            unsafe { inout_ptr.write(user.cast()) };
            Status::OK
        }
        AllocatorCommand::REALLOC => {
            let Some(size) = requested() else { return code(StatusCode::INVALID_ARGUMENT) };
            // SAFETY: `inout_ptr` is non-null and readable (contract).
            let old = unsafe { inout_ptr.read() }.cast::<u8>();
            if old.is_null() {
                let Some(user) = allocate(size, false) else { return code(StatusCode::RESOURCE_EXHAUSTED) };
                counters.allocated(size);
                // SAFETY: as above, writable.
                unsafe { inout_ptr.write(user.cast()) };
                return Status::OK;
            }
            // SAFETY: a non-null old pointer came from this allocator (contract).
            let Some((user, old_size)) = (unsafe { reallocate(old, size) }) else {
                return code(StatusCode::RESOURCE_EXHAUSTED);
            };
            if size >= old_size {
                counters.grow(size - old_size);
            } else {
                counters.shrink(old_size - size);
            }
            // SAFETY: as above, writable.
            unsafe { inout_ptr.write(user.cast()) };
            Status::OK
        }
        AllocatorCommand::FREE => {
            // SAFETY: `inout_ptr` is non-null and readable (contract).
            let user = unsafe { inout_ptr.read() }.cast::<u8>();
            if !user.is_null() {
                // SAFETY: a non-null pointer came from this allocator (contract).
                let size = unsafe { release(user) };
                counters.freed(size);
                // SAFETY: as above, writable.
                unsafe { inout_ptr.write(std::ptr::null_mut()) };
            }
            Status::OK
        }
        _ => code(StatusCode::INVALID_ARGUMENT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl(allocator: &Allocator, command: u32, size: Option<usize>, ptr: &mut *mut c_void) -> StatusCode {
        let params = size.map(|byte_length| AllocatorAllocParams { byte_length });
        let params_ptr = params.as_ref().map_or(std::ptr::null(), |p| std::ptr::from_ref(p).cast());
        let function = allocator.ctl.expect("host allocator has a ctl");
        // SAFETY: `allocator` comes from `CountingAllocator::allocator` over
        // counters the test keeps alive; `ptr` is a valid pointer slot holding
        // NULL or a block from this allocator.
        unsafe { function(allocator.self_, AllocatorCommand(command), params_ptr, ptr) }.code()
    }

    #[test]
    fn malloc_calloc_realloc_free_keep_counts() {
        let counters = CountingAllocator::new();
        let allocator = counters.abi();

        let mut a = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, 0, Some(24), &mut a), StatusCode::OK);
        assert!(!a.is_null());
        assert_eq!(a as usize % 16, 0);
        // SAFETY: `a` is a live 24-byte block.
        unsafe { std::ptr::write_bytes(a.cast::<u8>(), 0xAB, 24) };

        let mut b = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, 1, Some(100), &mut b), StatusCode::OK);
        // SAFETY: `b` is a live 100-byte block.
        let zeroed = unsafe { std::slice::from_raw_parts(b.cast::<u8>(), 100) };
        assert!(zeroed.iter().all(|&byte| byte == 0));
        assert_eq!(
            counters.stats(),
            AllocationStats { live_allocations: 2, live_bytes: 124, total_allocations: 2, peak_bytes: 124 }
        );

        // Grow `a`: contents kept, counters follow.
        assert_eq!(ctl(&allocator, 2, Some(4000), &mut a), StatusCode::OK);
        assert_eq!(a as usize % 16, 0);
        // SAFETY: `a` is a live block of at least 24 bytes.
        let kept = unsafe { std::slice::from_raw_parts(a.cast::<u8>(), 24) };
        assert!(kept.iter().all(|&byte| byte == 0xAB));
        assert_eq!(counters.stats().live_bytes, 4100);
        // Shrink it.
        assert_eq!(ctl(&allocator, 2, Some(8), &mut a), StatusCode::OK);
        assert_eq!(counters.stats().live_bytes, 108);
        assert_eq!(counters.stats().peak_bytes, 4100);

        // REALLOC of NULL allocates.
        let mut c = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, 2, Some(0), &mut c), StatusCode::OK);
        assert!(!c.is_null());
        assert_eq!(counters.stats().total_allocations, 3);

        for block in [&mut a, &mut b, &mut c] {
            assert_eq!(ctl(&allocator, 3, None, block), StatusCode::OK);
            assert!(block.is_null());
        }
        assert_eq!(
            counters.stats(),
            AllocationStats { live_allocations: 0, live_bytes: 0, total_allocations: 3, peak_bytes: 4100 }
        );
    }

    #[test]
    fn bad_requests_are_typed_statuses() {
        let counters = CountingAllocator::new();
        let allocator = counters.abi();
        let mut ptr = std::ptr::null_mut();
        // FREE of NULL is fine.
        assert_eq!(ctl(&allocator, 3, None, &mut ptr), StatusCode::OK);
        // Unknown command.
        assert_eq!(ctl(&allocator, 7, Some(8), &mut ptr), StatusCode::INVALID_ARGUMENT);
        // MALLOC without params.
        assert_eq!(ctl(&allocator, 0, None, &mut ptr), StatusCode::INVALID_ARGUMENT);
        // A size no allocator can satisfy.
        assert_eq!(ctl(&allocator, 0, Some(usize::MAX - 8), &mut ptr), StatusCode::RESOURCE_EXHAUSTED);
        assert_eq!(ctl(&allocator, 1, Some(isize::MAX as usize), &mut ptr), StatusCode::RESOURCE_EXHAUSTED);
        assert!(ptr.is_null());
        // A failed REALLOC leaves the block in place.
        assert_eq!(ctl(&allocator, 0, Some(16), &mut ptr), StatusCode::OK);
        let before = ptr;
        assert_eq!(ctl(&allocator, 2, Some(usize::MAX - 8), &mut ptr), StatusCode::RESOURCE_EXHAUSTED);
        assert_eq!(ptr, before);
        assert_eq!(ctl(&allocator, 3, None, &mut ptr), StatusCode::OK);
        assert_eq!(counters.stats().live_allocations, 0);
        // NULL inout pointer.
        let function = allocator.ctl.expect("host allocator has a ctl");
        // SAFETY: a NULL `inout_ptr` is rejected before anything is read.
        let status = unsafe {
            function(allocator.self_, AllocatorCommand::FREE, std::ptr::null(), std::ptr::null_mut())
        };
        assert_eq!(status.code(), StatusCode::INVALID_ARGUMENT);
    }
}
