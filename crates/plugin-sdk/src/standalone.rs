//! The `standalone` feature: what a plugin linked as an embedded ELF file
//! (`.sos`) needs besides its own code, from a `no_std` static library.
//!
//! - a global allocator that allocates through the **host allocator** the
//!   plugin was given at `load` ([`HostGlobalAlloc`]), so `alloc`'s
//!   `Box`, `Vec` and `String` work and the host accounts for every byte;
//! - a panic handler that stops the plugin with the architecture's trap
//!   instruction (a `.sos` cannot print or unwind; build it with
//!   `panic = "abort"`);
//! - the C memory functions, from `xplug-sdk-builtins`.
//!
//! An FFI-edge module: it stores the host's allocator and calls it.
//!
//! Two writable globals exist in this mode, and nothing else of the
//! `STANDALONE` promise is relaxed: the host allocator of the latest
//! `load` (a global allocator has no other way to reach it), and the
//! message of the latest refused `load` (`xplug_plugin_load_error`, see
//! `ffi.rs`). Each `.sos` image a host maps has its own copy of both.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, Ordering};

use xplug_abi::Allocator;

use crate::{HOST_ALIGNMENT, HostAllocator};

/// Bytes in front of each global allocation: the allocator that made it,
/// so `dealloc` frees through the same one even after a later `load` gave
/// another.
const HEADER: usize = HOST_ALIGNMENT;
const _: () = assert!(size_of::<Allocator>() <= HEADER && align_of::<Allocator>() <= HEADER);

/// A spin lock around one [`Allocator`] value (two words that must be read
/// and written together). Held only for a copy.
struct Slot {
    locked: AtomicBool,
    value: UnsafeCell<Allocator>,
}

// SAFETY: `value` is only accessed while `locked` is held (see `with`), so
// no two threads touch it at once; `Allocator` is two plain pointers.
unsafe impl Sync for Slot {}

impl Slot {
    fn with<R>(&self, f: impl FnOnce(&mut Allocator) -> R) -> R {
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
        // SAFETY: the lock is held, so this is the only access.
        let result = f(unsafe { &mut *self.value.get() });
        self.locked.store(false, Ordering::Release);
        result
    }
}

static HOST: Slot = Slot {
    locked: AtomicBool::new(false),
    value: UnsafeCell::new(Allocator { self_: ptr::null_mut(), ctl: None }),
};

/// Makes `allocator` the one global allocations use from now on (called
/// by every `load`, before the plugin's own code runs).
pub(crate) fn set_host_allocator(allocator: HostAllocator) {
    HOST.with(|slot| *slot = allocator.as_raw());
}

/// The global allocator of a standalone plugin: every block comes from the
/// host allocator of the latest `load` (with a 16-byte header naming that
/// allocator, which `dealloc` frees through). Before any `load`, and for
/// alignments above [`HOST_ALIGNMENT`], it returns NULL (an allocation
/// failure, which stops the plugin through the panic handler).
pub(crate) struct HostGlobalAlloc;

// SAFETY: `alloc` returns NULL or a block of `HEADER + size` bytes from
// the host allocator (aligned to 16 >= `layout.align()`, checked), offset
// by `HEADER` (a multiple of every accepted alignment), so the result is
// aligned and valid for `size` bytes; `dealloc` gets back exactly such a
// pointer and frees the whole block through the allocator recorded in it.
unsafe impl GlobalAlloc for HostGlobalAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > HOST_ALIGNMENT {
            return ptr::null_mut();
        }
        let Some(bytes) = layout.size().checked_add(HEADER) else { return ptr::null_mut() };
        let raw = HOST.with(|slot| *slot);
        // SAFETY: the value was handed over by a host in `load`, whose
        // contract makes it valid while the plugin is loaded (and a global
        // allocation only happens in the plugin's code, while it is).
        let host = unsafe { HostAllocator::from_raw(raw) };
        let Ok(block) = host.allocate(bytes, "a global allocation") else { return ptr::null_mut() };
        // SAFETY: the block holds `HEADER + size` bytes aligned to 16: the
        // header fits an `Allocator` (asserted above) at its start, and the
        // returned pointer stays inside the block.
        unsafe {
            block.as_ptr().cast::<Allocator>().write(raw);
            block.as_ptr().add(HEADER)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from `alloc` (GlobalAlloc's contract), so
        // `HEADER` bytes before it start the host block, which begins with
        // the allocator that made it.
        unsafe {
            let block = ptr.sub(HEADER);
            let raw = block.cast::<Allocator>().read();
            if let Some(block) = NonNull::new(block) {
                HostAllocator::from_raw(raw).free(block);
            }
        }
    }
}

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: HostGlobalAlloc = HostGlobalAlloc;

/// Stops the plugin: executes the architecture's trap instruction (the
/// host sees SIGILL; `xplug check` and the probe report it as a crash).
#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `ud2` raises an invalid-opcode fault; it touches no memory.
        unsafe {
            core::arch::asm!("ud2", options(nomem, nostack))
        };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `udf #0` raises an undefined-instruction fault; no memory.
        unsafe {
            core::arch::asm!("udf #0", options(nomem, nostack))
        };
        #[cfg(any(target_arch = "riscv64", target_arch = "riscv32"))]
        // SAFETY: `unimp` raises an illegal-instruction fault; no memory.
        unsafe {
            core::arch::asm!("unimp", options(nomem, nostack))
        };
    }
}
