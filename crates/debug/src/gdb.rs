//! GDB's JIT interface: every image xplug maps is announced to a debugger
//! (gdb, lldb) attached now or later, so its backtraces name the image's
//! functions instead of `??`.
//!
//! The protocol (GDB's manual, "JIT Compilation Interface"): the process
//! exports `__jit_debug_descriptor`, a doubly linked list of entries, and
//! an empty, never-inlined function `__jit_debug_register_code` the
//! debugger puts a breakpoint in (both defined weak here, so another JIT's
//! definitions win and every JIT shares one list). To announce code, add an entry pointing
//! at an in-memory ELF object, mark it relevant with the action flag
//! "register" and call the function; to withdraw it, unlink it with
//! "unregister" and call again. Here each entry's object is a small ELF
//! (built by [`symbol_file`]) with one `.text` section at the image's code
//! address and one symbol per function at its mapped address. The list is
//! changed under one lock, so images may be mapped and dropped
//! concurrently from any threads.
//!
//! Registration costs one symbol-table read, a small ELF and a lock per
//! image: about 7 µs on a 41 µs load on a quiet machine, which keeps the
//! load row (7) below IREE's own embedded loader (`docs/src/operating/debugging.md#cost`).
//! So it is on by default; [`GDB_JIT_ENV`] (`0` or `1`) or [`set_enabled`]
//! turn it off or on.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use object::elf;
use object::endian::{Endianness, U16, U32, U64};
use object::pod::bytes_of;

use xplug_elf::ImageFunction;

/// Set to `1` to announce images to debuggers, `0` not to (the default:
/// on).
pub const GDB_JIT_ENV: &str = "XPLUG_GDB_JIT";

/// `jit_actions_t`.
const JIT_NOACTION: u32 = 0;
const JIT_REGISTER_FN: u32 = 1;
const JIT_UNREGISTER_FN: u32 = 2;

/// `struct jit_code_entry`.
#[repr(C)]
struct JitCodeEntry {
    next: *mut JitCodeEntry,
    prev: *mut JitCodeEntry,
    symfile_addr: *const u8,
    symfile_size: u64,
}

/// `struct jit_descriptor`.
#[repr(C)]
struct JitDescriptor {
    version: u32,
    action_flag: u32,
    relevant_entry: *mut JitCodeEntry,
    first_entry: *mut JitCodeEntry,
}

// The two symbols the protocol names, defined *weak* where this module knows
// how: a process may link another JIT that defines them too (LLVM's ORC and
// MCJIT, V8, wasmtime), and the protocol has one list per process. With
// weak definitions the linker takes the other JIT's strong ones, if any,
// and every JIT (this module included) adds its entries to the same list,
// so the debugger sees all of them; without another JIT these are the
// definitions. Rust has no stable weak linkage, so they are written as
// assembler directives: the descriptor as `struct jit_descriptor { uint32_t
// version = 1; uint32_t action_flag = JIT_NOACTION; void* relevant_entry =
// NULL; void* first_entry = NULL; }` (24 bytes, 8-aligned on the 64-bit
// targets this covers; `JitDescriptor` below), the function as a bare
// `ret`, which the compiler cannot inline or elide. Elsewhere (Mach-O and
// PE have no ELF weak directives; 32-bit targets and other instruction
// sets are not written out here) the plain definitions of the other
// module, which another JIT's in the same process would collide with.
#[cfg(all(
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64"),
    not(any(target_vendor = "apple", target_os = "windows"))
))]
mod symbols {
    use super::JitDescriptor;

    core::arch::global_asm!(
        ".pushsection .data.__jit_debug_descriptor,\"aw\",%progbits",
        ".weak __jit_debug_descriptor",
        ".type __jit_debug_descriptor,%object",
        ".balign 8",
        "__jit_debug_descriptor:",
        ".4byte 1",
        ".4byte 0",
        ".8byte 0",
        ".8byte 0",
        ".size __jit_debug_descriptor, 24",
        ".popsection",
        ".pushsection .text.__jit_debug_register_code,\"ax\",%progbits",
        ".weak __jit_debug_register_code",
        ".type __jit_debug_register_code,%function",
        ".balign 16",
        "__jit_debug_register_code:",
        "ret",
        ".size __jit_debug_register_code, . - __jit_debug_register_code",
        ".popsection",
    );

    /// Asserts at compile time what the assembler definition above assumes.
    const _: () = assert!(size_of::<JitDescriptor>() == 24 && align_of::<JitDescriptor>() == 8);

    unsafe extern "C" {
        /// The descriptor debuggers read: this module's weak definition or
        /// another JIT's. Written by this module only under `LIST`, and by
        /// another JIT under its own lock.
        pub(super) static mut __jit_debug_descriptor: JitDescriptor;
        /// The function a debugger breaks in to read the descriptor.
        pub(super) fn __jit_debug_register_code();
    }
}

#[cfg(not(all(
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64"),
    not(any(target_vendor = "apple", target_os = "windows"))
)))]
mod symbols {
    use super::{JIT_NOACTION, JitDescriptor};

    /// The descriptor debuggers read.
    #[unsafe(no_mangle)]
    pub(super) static mut __jit_debug_descriptor: JitDescriptor = JitDescriptor {
        version: 1,
        action_flag: JIT_NOACTION,
        relevant_entry: std::ptr::null_mut(),
        first_entry: std::ptr::null_mut(),
    };

    /// The function a debugger breaks in to read the descriptor: empty and
    /// never inlined.
    #[unsafe(no_mangle)]
    #[inline(never)]
    pub(super) unsafe extern "C" fn __jit_debug_register_code() {
        // Something the optimiser cannot remove, so calls are not elided.
        std::hint::black_box(());
    }
}

/// The process's descriptor, to read or write under [`LIST`] only (the
/// debugger reads it while the process is stopped).
fn descriptor_ptr() -> *mut JitDescriptor {
    &raw mut symbols::__jit_debug_descriptor
}

/// Tells an attached debugger that the descriptor changed.
fn notify_debugger() {
    // SAFETY: an empty function taking nothing (this module's definition)
    // or another JIT's equivalent; called under `LIST`, as the protocol's
    // changes must be.
    unsafe { symbols::__jit_debug_register_code() };
}

/// Serialises changes to the list.
static LIST: Mutex<()> = Mutex::new(());
/// Entries registered and unregistered since the process started.
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
static UNREGISTERED: AtomicUsize = AtomicUsize::new(0);
/// 0: the environment not read yet; 1: off; 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Turns announcing images on or off for images mapped from now on
/// (images already announced stay until they drop).
pub fn set_enabled(on: bool) {
    STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether images mapped now are announced: what [`set_enabled`] said,
/// else what [`GDB_JIT_ENV`] says, else yes.
#[must_use]
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = match std::env::var_os(GDB_JIT_ENV) {
                Some(value) if value == "1" => true,
                Some(value) if value == "0" => false,
                _ => true,
            };
            let _ = STATE.compare_exchange(0, if on { 2 } else { 1 }, Ordering::Relaxed, Ordering::Relaxed);
            STATE.load(Ordering::Relaxed) == 2
        }
        state => state == 2,
    }
}

/// How many entries are in the descriptor's list now.
#[must_use]
pub fn registered_images() -> usize {
    let _list = LIST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut count = 0;
    // SAFETY: under the lock nobody changes the list; every entry in it is
    // a live `Box` owned by a `GdbRegistration`.
    unsafe {
        let mut entry = (*descriptor_ptr()).first_entry;
        while let Some(current) = entry.as_ref() {
            count += 1;
            entry = current.next;
        }
    }
    count
}

/// How many entries were added and removed since the process started.
#[must_use]
pub fn registration_counts() -> (usize, usize) {
    (REGISTERED.load(Ordering::SeqCst), UNREGISTERED.load(Ordering::SeqCst))
}

/// An image's entry in the descriptor's list, removed on drop.
pub(crate) struct GdbRegistration {
    entry: *mut JitCodeEntry,
    /// The ELF object the entry points at.
    _object: Box<[u8]>,
}

impl std::fmt::Debug for GdbRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GdbRegistration").field("object_size", &self._object.len()).finish()
    }
}

// SAFETY: the entry is only touched under the `LIST` lock; the object is
// immutable.
unsafe impl Send for GdbRegistration {}
// SAFETY: `&GdbRegistration` gives access to nothing.
unsafe impl Sync for GdbRegistration {}

/// Announces `object` (from [`symbol_file`]) to debuggers.
pub(crate) fn register(object: Vec<u8>) -> GdbRegistration {
    let object = object.into_boxed_slice();
    let entry = Box::into_raw(Box::new(JitCodeEntry {
        next: std::ptr::null_mut(),
        prev: std::ptr::null_mut(),
        symfile_addr: object.as_ptr(),
        symfile_size: object.len() as u64,
    }));
    let _list = LIST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // SAFETY: under the lock; `entry` is a fresh allocation, the first
    // entry (if any) a live one owned by another registration.
    unsafe {
        let descriptor = &mut *descriptor_ptr();
        (*entry).next = descriptor.first_entry;
        if let Some(first) = descriptor.first_entry.as_mut() {
            first.prev = entry;
        }
        descriptor.first_entry = entry;
        descriptor.relevant_entry = entry;
        descriptor.action_flag = JIT_REGISTER_FN;
    }
    notify_debugger();
    REGISTERED.fetch_add(1, Ordering::SeqCst);
    GdbRegistration { entry, _object: object }
}

impl Drop for GdbRegistration {
    fn drop(&mut self) {
        let _list = LIST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: under the lock; `self.entry` is in the list (added by
        // `register`, removed only here), its neighbours are live entries.
        unsafe {
            let descriptor = &mut *descriptor_ptr();
            let entry = &mut *self.entry;
            match entry.prev.as_mut() {
                Some(prev) => prev.next = entry.next,
                None => descriptor.first_entry = entry.next,
            }
            if let Some(next) = entry.next.as_mut() {
                next.prev = entry.prev;
            }
            descriptor.relevant_entry = self.entry;
            descriptor.action_flag = JIT_UNREGISTER_FN;
        }
        notify_debugger();
        // SAFETY: unlinked above; the debugger read what it needed during
        // the call. The box is freed once, here.
        unsafe {
            let descriptor = &mut *descriptor_ptr();
            descriptor.relevant_entry = std::ptr::null_mut();
            descriptor.action_flag = JIT_NOACTION;
            drop(Box::from_raw(self.entry));
        }
        UNREGISTERED.fetch_add(1, Ordering::SeqCst);
    }
}

/// A relocatable 64-bit ELF object describing mapped code for a debugger:
/// a `.text` section without bytes (`SHT_NOBITS`) at `code.0` spanning
/// `code`, and one global function symbol per entry of `functions` (their
/// offsets relative to `base`), valued relative to `.text` as in any
/// relocatable file, plus an `STT_FILE` symbol naming the image. The
/// debugger places `.text` at its address, so the symbols land on the
/// mapped code.
#[must_use]
pub fn symbol_file(name: &str, code: (usize, usize), base: usize, functions: &[ImageFunction]) -> Vec<u8> {
    let e = if cfg!(target_endian = "little") { Endianness::Little } else { Endianness::Big };
    let (start, end) = (code.0 as u64, code.1.max(code.0) as u64);

    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let (text_name, symtab_name, strtab_name, shstrtab_name) = (1, 7, 15, 23);

    let mut strtab = vec![0u8];
    let mut symbols = vec![elf::Sym64::<Endianness> {
        st_name: U32::new(e, 0),
        st_info: 0,
        st_other: 0,
        st_shndx: U16::new(e, 0),
        st_value: U64::new(e, 0),
        st_size: U64::new(e, 0),
    }];
    let mut add_name = |text: &str| {
        let at = strtab.len() as u32;
        strtab.extend(text.bytes().filter(|&byte| byte != 0));
        strtab.push(0);
        at
    };
    symbols.push(elf::Sym64 {
        st_name: U32::new(e, add_name(name)),
        st_info: (elf::STB_LOCAL << 4) | elf::STT_FILE,
        st_other: 0,
        st_shndx: U16::new(e, elf::SHN_ABS),
        st_value: U64::new(e, 0),
        st_size: U64::new(e, 0),
    });
    let first_global = symbols.len() as u32;
    for function in functions {
        let address = base as u64 + function.offset;
        if address < start || address + function.size > end {
            continue;
        }
        symbols.push(elf::Sym64 {
            st_name: U32::new(e, add_name(&function.name)),
            st_info: (elf::STB_GLOBAL << 4) | elf::STT_FUNC,
            st_other: elf::STV_DEFAULT,
            st_shndx: U16::new(e, 1),
            st_value: U64::new(e, address - start),
            st_size: U64::new(e, function.size),
        });
    }

    let header_size = std::mem::size_of::<elf::FileHeader64<Endianness>>() as u64;
    let sym_size = std::mem::size_of::<elf::Sym64<Endianness>>() as u64;
    let shstrtab_at = header_size;
    let strtab_at = shstrtab_at + shstrtab.len() as u64;
    let symtab_at = (strtab_at + strtab.len() as u64).next_multiple_of(8);
    let sections_at = symtab_at + symbols.len() as u64 * sym_size;

    let section =
        |name: u32, kind: u32, flags: u64, addr: u64, offset: u64, size: u64, link: u32, info: u32| {
            elf::SectionHeader64::<Endianness> {
                sh_name: U32::new(e, name),
                sh_type: U32::new(e, kind),
                sh_flags: U64::new(e, flags),
                sh_addr: U64::new(e, addr),
                sh_offset: U64::new(e, offset),
                sh_size: U64::new(e, size),
                sh_link: U32::new(e, link),
                sh_info: U32::new(e, info),
                sh_addralign: U64::new(e, if kind == elf::SHT_SYMTAB { 8 } else { 1 }),
                sh_entsize: U64::new(e, if kind == elf::SHT_SYMTAB { sym_size } else { 0 }),
            }
        };
    let sections = [
        section(0, elf::SHT_NULL, 0, 0, 0, 0, 0, 0),
        section(
            text_name,
            elf::SHT_NOBITS,
            u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR),
            start,
            0,
            end - start,
            0,
            0,
        ),
        section(
            symtab_name,
            elf::SHT_SYMTAB,
            0,
            0,
            symtab_at,
            symbols.len() as u64 * sym_size,
            3,
            first_global,
        ),
        section(strtab_name, elf::SHT_STRTAB, 0, 0, strtab_at, strtab.len() as u64, 0, 0),
        section(shstrtab_name, elf::SHT_STRTAB, 0, 0, shstrtab_at, shstrtab.len() as u64, 0, 0),
    ];
    let header = elf::FileHeader64::<Endianness> {
        e_ident: elf::Ident {
            magic: elf::ELFMAG,
            class: elf::ELFCLASS64,
            data: if e == Endianness::Little { elf::ELFDATA2LSB } else { elf::ELFDATA2MSB },
            version: elf::EV_CURRENT,
            os_abi: elf::ELFOSABI_NONE,
            abi_version: 0,
            padding: [0; 7],
        },
        e_type: U16::new(e, elf::ET_REL),
        e_machine: U16::new(e, xplug_elf::host_machine().unwrap_or(elf::EM_NONE)),
        e_version: U32::new(e, u32::from(elf::EV_CURRENT)),
        e_entry: U64::new(e, 0),
        e_phoff: U64::new(e, 0),
        e_shoff: U64::new(e, sections_at),
        e_flags: U32::new(e, 0),
        e_ehsize: U16::new(e, header_size as u16),
        e_phentsize: U16::new(e, 0),
        e_phnum: U16::new(e, 0),
        e_shentsize: U16::new(e, std::mem::size_of::<elf::SectionHeader64<Endianness>>() as u16),
        e_shnum: U16::new(e, sections.len() as u16),
        e_shstrndx: U16::new(e, 4),
    };

    let mut file = Vec::with_capacity(sections_at as usize + sections.len() * 64);
    file.extend_from_slice(bytes_of(&header));
    file.extend_from_slice(shstrtab);
    file.extend_from_slice(&strtab);
    file.resize(symtab_at as usize, 0);
    for symbol in &symbols {
        file.extend_from_slice(bytes_of(symbol));
    }
    for section in &sections {
        file.extend_from_slice(bytes_of(section));
    }
    file
}

#[cfg(test)]
mod tests {
    use object::{Object, ObjectSection, ObjectSymbol};

    use super::*;

    #[test]
    fn the_symbol_file_reads_back_with_the_mapped_addresses() {
        let functions = [
            ImageFunction { name: "kernel".into(), offset: 0x1010, size: 0x20 },
            ImageFunction { name: "other".into(), offset: 0x1040, size: 0x8 },
            // Outside the code range: left out.
            ImageFunction { name: "data".into(), offset: 0x9000, size: 0x8 },
        ];
        let base = 0x7f00_0000_0000;
        let bytes = symbol_file("image.sos", (base + 0x1000, base + 0x1100), base, &functions);
        let file = object::File::parse(&*bytes).unwrap();
        let text = file.section_by_name(".text").unwrap();
        assert_eq!((text.address(), text.size()), (base as u64 + 0x1000, 0x100));
        let named: Vec<(String, u64, u64)> = file
            .symbols()
            .filter(|symbol| symbol.kind() == object::SymbolKind::Text)
            .map(|symbol| (symbol.name().unwrap().to_owned(), symbol.address(), symbol.size()))
            .collect();
        // `object` reports a relocatable symbol's value relative to its
        // section, as a debugger reads it before placing the section.
        assert_eq!(named, [("kernel".to_owned(), 0x10, 0x20), ("other".to_owned(), 0x40, 0x8)]);
        assert!(file.symbols().any(|symbol| symbol.name() == Ok("image.sos")));
    }

    #[test]
    fn entries_are_linked_and_unlinked_in_any_order() {
        let _serial = crate::gdb::tests::SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = registered_images();
        let a = register(vec![1]);
        let b = register(vec![2]);
        let c = register(vec![3]);
        assert_eq!(registered_images(), before + 3);
        drop(b);
        assert_eq!(registered_images(), before + 2);
        drop(c);
        drop(a);
        assert_eq!(registered_images(), before);
    }

    pub(crate) static SERIAL: Mutex<()> = Mutex::new(());
}
