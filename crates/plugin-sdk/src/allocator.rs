//! Safe access to the host allocator a plugin receives at load time.
//!
//! An FFI-edge module: it calls the host's `ctl` function pointer.

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ops::{Deref, DerefMut};
use core::ptr::{self, NonNull};

use xplug_abi::{Allocator, AllocatorAllocParams, AllocatorCommand, StatusCode};

use crate::Error;

/// The alignment every host allocation is guaranteed to have (`docs/src/reference/abi.md#allocator`).
pub const HOST_ALIGNMENT: usize = 16;

/// A copy of the allocator the host passed in the load environment.
///
/// The environment struct itself is only valid during `load`, but the
/// allocator it carries stays usable while the plugin is loaded, so plugin
/// state may keep this handle (it is `Copy`, `Send` and `Sync`) and allocate
/// from any thread. Everything allocated through it is visible to the host's
/// accounting; a `standalone` plugin must allocate nothing else.
///
/// Obtain it from [`crate::Environment::host_allocator`].
#[derive(Clone, Copy)]
pub struct HostAllocator {
    raw: Allocator,
}

impl fmt::Debug for HostAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostAllocator").field("self", &self.raw.self_).finish_non_exhaustive()
    }
}

impl HostAllocator {
    /// Wraps the allocator a host handed over.
    ///
    /// # Safety
    /// `raw` must obey the v0 allocator contract (`docs/src/reference/abi.md#allocator`) for as long as the
    /// returned value or any copy of it is used: `ctl` is NULL or a function
    /// that, for `MALLOC`, writes a block of at least the requested size
    /// aligned to [`HOST_ALIGNMENT`] (or returns an error), and for `FREE`
    /// releases a block it returned; callable from any thread.
    #[must_use]
    pub const unsafe fn from_raw(raw: Allocator) -> Self {
        Self { raw }
    }

    /// The raw allocator value, e.g. to hand on to C code.
    #[must_use]
    pub const fn as_raw(&self) -> Allocator {
        self.raw
    }

    /// Allocates `bytes` bytes (at least one) aligned to [`HOST_ALIGNMENT`].
    ///
    /// `what` names the allocation in the error. The block must be released
    /// with [`HostAllocator::free`] on an allocator with the same `self`.
    ///
    /// # Errors
    /// [`Error::NoAllocator`] when the host gave no `ctl` function,
    /// [`Error::OutOfMemory`] when the host fails or returns NULL.
    pub fn allocate(&self, bytes: usize, what: &'static str) -> Result<NonNull<u8>, Error> {
        let ctl = self.raw.ctl.ok_or(Error::NoAllocator { what })?;
        let params = AllocatorAllocParams { byte_length: bytes.max(1) };
        let mut block: *mut c_void = ptr::null_mut();
        // SAFETY: `from_raw`'s caller promised `ctl` follows the allocator
        // contract; MALLOC reads `params` (a live local of the right type)
        // and writes the new block to `block` (a live local).
        let status = unsafe {
            ctl(self.raw.self_, AllocatorCommand::MALLOC, (&raw const params).cast(), &raw mut block)
        };
        if !status.is_ok() {
            return Err(Error::OutOfMemory { what, bytes, code: status.code() });
        }
        NonNull::new(block.cast::<u8>()).ok_or(Error::OutOfMemory {
            what,
            bytes,
            code: StatusCode::RESOURCE_EXHAUSTED,
        })
    }

    /// Returns a block to the host.
    ///
    /// # Safety
    /// `block` must come from [`HostAllocator::allocate`] on an allocator
    /// with the same `self` and `ctl`, and must not be used afterwards.
    pub unsafe fn free(&self, block: NonNull<u8>) {
        let Some(ctl) = self.raw.ctl else { return };
        let mut inout = block.as_ptr().cast::<c_void>();
        // SAFETY: the caller passes a block this allocator returned; FREE
        // takes NULL params and reads the pointer from `inout`. The status
        // of a free carries nothing actionable, so it is ignored.
        let _ = unsafe { ctl(self.raw.self_, AllocatorCommand::FREE, ptr::null(), &raw mut inout) };
    }

    /// Moves `value` into a host allocation.
    ///
    /// Zero-sized values take no host memory.
    ///
    /// # Errors
    /// As [`HostAllocator::allocate`], plus [`Error::OverAligned`] when `T`
    /// needs more than [`HOST_ALIGNMENT`].
    pub fn boxed<T>(&self, value: T) -> Result<HostBox<T>, Error> {
        HostBox::new_in(value, *self)
    }
}

/// A value living in host memory, freed when dropped (like `Box`).
///
/// ```no_run
/// # fn demo(env: &xplug_sdk::Environment<'_>) -> Result<(), xplug_sdk::Error> {
/// let mut counter = env.host_allocator().boxed(0_u64)?;
/// *counter += 1;
/// assert_eq!(*counter, 1);
/// # Ok(()) }
/// ```
pub struct HostBox<T> {
    ptr: NonNull<T>,
    allocator: HostAllocator,
    _owns: PhantomData<T>,
}

// SAFETY: a `HostBox<T>` owns its `T` exactly like `Box<T>`; the allocator
// handle is `Send` (hosts accept calls from any thread).
unsafe impl<T: Send> Send for HostBox<T> {}
// SAFETY: shared access only hands out `&T`, as for `Box<T>`.
unsafe impl<T: Sync> Sync for HostBox<T> {}

impl<T> HostBox<T> {
    /// Moves `value` into memory from `allocator`.
    ///
    /// # Errors
    /// See [`HostAllocator::boxed`].
    pub fn new_in(value: T, allocator: HostAllocator) -> Result<Self, Error> {
        let what = core::any::type_name::<T>();
        if align_of::<T>() > HOST_ALIGNMENT {
            return Err(Error::OverAligned { what, align: align_of::<T>(), guaranteed: HOST_ALIGNMENT });
        }
        let ptr = if size_of::<T>() == 0 {
            NonNull::dangling()
        } else {
            allocator.allocate(size_of::<T>(), what)?.cast::<T>()
        };
        // SAFETY: `ptr` is either dangling for a zero-sized `T` (valid for
        // zero-sized writes) or a fresh host block of `size_of::<T>()` bytes
        // aligned to 16 >= `align_of::<T>()`.
        unsafe { ptr.as_ptr().write(value) };
        Ok(Self { ptr, allocator, _owns: PhantomData })
    }

    /// Gives up ownership: the caller must eventually pass the pointer back
    /// to [`HostBox::from_raw`] with the same allocator.
    #[must_use]
    pub fn into_raw(this: Self) -> NonNull<T> {
        let ptr = this.ptr;
        core::mem::forget(this);
        ptr
    }

    /// Takes back ownership of a pointer from [`HostBox::into_raw`].
    ///
    /// # Safety
    /// `ptr` must come from `HostBox::<T>::into_raw` of a box created with
    /// `allocator` (same `self` and `ctl`), and not have been reclaimed yet.
    #[must_use]
    pub unsafe fn from_raw(ptr: NonNull<T>, allocator: HostAllocator) -> Self {
        Self { ptr, allocator, _owns: PhantomData }
    }

    /// The allocator the value lives in.
    #[must_use]
    pub fn allocator(this: &Self) -> HostAllocator {
        this.allocator
    }
}

impl<T> Deref for HostBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `ptr` points at an initialised `T` owned by this box.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for HostBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` guarantees exclusive access.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: fmt::Debug> fmt::Debug for HostBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T> Drop for HostBox<T> {
    fn drop(&mut self) {
        // Free the block even if `T`'s destructor panics.
        struct FreeOnDrop<'a, T>(&'a HostBox<T>);
        impl<T> Drop for FreeOnDrop<'_, T> {
            fn drop(&mut self) {
                if size_of::<T>() != 0 {
                    // SAFETY: the block came from `allocate` on this
                    // allocator (see `new_in`/`from_raw`) and is not used
                    // after this point.
                    unsafe { self.0.allocator.free(self.0.ptr.cast()) };
                }
            }
        }
        let guard = FreeOnDrop(self);
        // SAFETY: the box owns an initialised `T` that nothing else drops.
        unsafe { ptr::drop_in_place(guard.0.ptr.as_ptr()) };
    }
}
