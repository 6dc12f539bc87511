//! A process that links another JIT defining GDB's JIT symbols (as LLVM's
//! `GDBRegistrationListener.cpp`, V8 and wasmtime do) links with xplug, and
//! the images xplug maps are listed in that JIT's descriptor, the one a
//! debugger reads (`docs/src/operating/debugging.md#gdb-and-lldb`).
//!
//! This test binary plays the other JIT: it defines both symbols strongly,
//! so the linker takes its definitions over xplug-debug's weak ones.

use std::sync::atomic::{AtomicUsize, Ordering};

use xplug_debug::{MappedRegion, code_mapped};
use xplug_elf::ElfImage;

/// `struct jit_code_entry`, as the other JIT declares it.
#[repr(C)]
struct JitCodeEntry {
    next: *mut JitCodeEntry,
    prev: *mut JitCodeEntry,
    symfile_addr: *const u8,
    symfile_size: u64,
}

/// `struct jit_descriptor`, as the other JIT declares it.
#[repr(C)]
struct JitDescriptor {
    version: u32,
    action_flag: u32,
    relevant_entry: *mut JitCodeEntry,
    first_entry: *mut JitCodeEntry,
}

/// The other JIT's descriptor (a strong definition).
#[unsafe(no_mangle)]
static mut __jit_debug_descriptor: JitDescriptor = JitDescriptor {
    version: 1,
    action_flag: 0,
    relevant_entry: std::ptr::null_mut(),
    first_entry: std::ptr::null_mut(),
};

/// Calls of the other JIT's notification function, with the action each
/// one announced.
static REGISTER_CALLS: AtomicUsize = AtomicUsize::new(0);
static UNREGISTER_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The other JIT's notification function (a strong definition): counts
/// each announced action, as a debugger's breakpoint would see it.
#[unsafe(no_mangle)]
#[inline(never)]
extern "C" fn __jit_debug_register_code() {
    // SAFETY: called by xplug-debug under its lock, with the descriptor
    // consistent; this test maps images from one thread.
    let action = unsafe { __jit_debug_descriptor.action_flag };
    match action {
        1 => REGISTER_CALLS.fetch_add(1, Ordering::SeqCst),
        2 => UNREGISTER_CALLS.fetch_add(1, Ordering::SeqCst),
        _ => 0,
    };
}

#[test]
fn images_are_listed_in_the_descriptor_of_another_jit_in_the_process() {
    xplug_debug::gdb::set_enabled(true);
    let bytes = std::fs::read(xplug_fixtures::build_rust_sos_plugin("crash_plugin")).unwrap();
    let image = ElfImage::load(&bytes).unwrap();
    let announced = code_mapped(MappedRegion::elf_image("crash_plugin.sos", &image, &bytes));

    // SAFETY: one thread maps and drops images here; xplug-debug wrote the
    // descriptor under its lock before `code_mapped` returned.
    let (first, version) = unsafe { (__jit_debug_descriptor.first_entry, __jit_debug_descriptor.version) };
    assert_eq!(version, 1);
    assert!(!first.is_null(), "xplug's image is listed in the other JIT's descriptor");
    // SAFETY: the entry xplug-debug linked in, alive while `image` is.
    let entry = unsafe { &*first };
    assert!(entry.next.is_null() && entry.prev.is_null(), "one entry");
    // SAFETY: the entry points at `symfile_size` bytes of xplug's object.
    let object = unsafe { std::slice::from_raw_parts(entry.symfile_addr, entry.symfile_size as usize) };
    assert_eq!(&object[..4], b"\x7fELF", "the entry is an in-memory ELF object");
    assert_eq!(REGISTER_CALLS.load(Ordering::SeqCst), 1, "the other JIT's function was told of the image");
    assert_eq!(xplug_debug::gdb::registered_images(), 1, "xplug walks the same list");

    drop(announced);
    drop(image);
    // SAFETY: as above.
    let first = unsafe { __jit_debug_descriptor.first_entry };
    assert!(first.is_null(), "the image left the list when it was dropped");
    assert_eq!(UNREGISTER_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(xplug_debug::gdb::registered_images(), 0);
}
