//! The host allocator interface handed to plugins at load time.

use core::ffi::c_void;

use crate::Status;

/// A command sent to an allocator's `ctl` function
/// (`iree_hal_executable_plugin_allocator_command_t`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct AllocatorCommand(pub u32);

impl AllocatorCommand {
    /// Allocate `byte_length` bytes; the new pointer is written to `*inout_ptr`.
    pub const MALLOC: Self = Self(0);
    /// As [`Self::MALLOC`], with the memory zeroed.
    pub const CALLOC: Self = Self(1);
    /// Resize the block in `*inout_ptr` (NULL allocates) to `byte_length`
    /// bytes; the possibly moved pointer is written back.
    pub const REALLOC: Self = Self(2);
    /// Free the block in `*inout_ptr`; `params` is NULL.
    pub const FREE: Self = Self(3);
}

/// Parameters of the allocating commands.
///
/// Used by [`AllocatorCommand::MALLOC`], [`AllocatorCommand::CALLOC`] and
/// [`AllocatorCommand::REALLOC`]; C name:
/// `iree_hal_executable_plugin_allocator_alloc_params_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocatorAllocParams {
    /// Requested size in bytes.
    pub byte_length: usize,
}

/// The allocator's single entry point.
///
/// C name: `iree_hal_executable_plugin_allocator_ctl_fn_t`.
///
/// Memory it returns is aligned for any type (16 bytes). Nullable, as it may
/// come from foreign code.
pub type AllocatorCtlFn = Option<
    unsafe extern "C" fn(
        allocator_self: *mut c_void,
        command: AllocatorCommand,
        params: *const c_void,
        inout_ptr: *mut *mut c_void,
    ) -> Status,
>;

/// An allocator: an opaque `self` plus its `ctl` function.
///
/// C name: `iree_hal_executable_plugin_allocator_t`, compatible with IREE's
/// `iree_allocator_t`.
///
/// cbindgen:field-names=[self, ctl]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Allocator {
    /// Opaque state passed back to `ctl` (C field name: `self`).
    pub self_: *mut c_void,
    /// The control function; NULL only in a zeroed, unusable allocator.
    pub ctl: AllocatorCtlFn,
}

// SAFETY: an `Allocator` is a pair of values; the v0 ABI requires a host
// allocator to be callable from any thread for as long as the plugin is
// loaded, so sharing or moving the pair between threads is allowed.
unsafe impl Send for Allocator {}
// SAFETY: see the `Send` impl; the type has no interior mutability.
unsafe impl Sync for Allocator {}
