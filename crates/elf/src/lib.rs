//! IREE's embedded ELF plugin format (`.sos`): standalone,
//! position-independent ELF shared objects that xplug loads itself, without
//! the OS loader (`docs/src/reference/embedded-elf.md`).
//!
//! # Where this crate sits
//! A host (`xplug-providers`) turns a query function into a loaded,
//! checked plugin; it does not care whether the OS loader or this crate
//! produced the function. This crate is everything between the bytes of a
//! `.sos` file and that query function, and nothing of the host: it
//! depends only on `xplug-abi` (for [`QueryFn`](xplug_abi::QueryFn)),
//! `object` (ELF structures and constants) and `libc` (the mapping). Tools
//! that only read or write the format (`cargo xtask`, the fuzzer) use it
//! without the host.
//!
//! A `.sos` file is one ELF or a FatELF container of several ([`fatelf`]);
//! the record for the target is picked, then loading is split in two:
//!
//! 1. [`validate`] ([`validate_for`] for another target): pure checks on
//!    the bytes (header, segments, dynamic section, symbols, relocations),
//!    producing an [`ElfPlan`]. It reads nothing but its input, so it is
//!    safe on hostile files, and it is fuzzed.
//! 2. [`ElfImage::load`]: one private reservation, segments copied in, the
//!    planned (range-checked) relocations applied, final protections set.
//!    [`ElfImage::query`] is then the plugin's query function.
//!
//! Every refusal is an [`EmbeddedElfError`] carrying the values the check
//! expected and found.
//!
//! # Debugging aids
//! This crate maps code but tells no tool about it: the host that loads an
//! image hands it to `xplug-debug`'s one "code mapped" hook (crash
//! reports, GDB's JIT interface, perf's map; `docs/src/operating/debugging.md`), which
//! names functions by the file's symbol table ([`image_functions`]) and
//! places them with [`ElfImage::code_range`] and [`ElfImage::base`].
//!
//! # Calling convention
//! The plugin's functions are called with the C convention of the host,
//! which on x86_64 Linux and macOS is System V (`sysv64`), the convention
//! `.sos` files are built for. The mapping step exists on Unix hosts only;
//! on other platforms [`ElfImage::load`] fails with
//! [`EmbeddedElfError::UnsupportedHost`] (a Windows host would also need
//! `extern "sysv64"` function types for every call into the plugin).
//!
//! # Example
//!
//! A FatELF container is searched for the target's record; an ELF header
//! alone is refused at the first table it lacks:
//!
//! ```
//! use xplug_elf::{ElfTarget, EmbeddedElfError, fatelf, validate_for};
//!
//! // The 64-byte header of a 64-bit little-endian x86_64 shared object,
//! // with no program headers.
//! let mut elf = vec![0u8; 64];
//! elf[..4].copy_from_slice(b"\x7fELF");
//! elf[4] = 2; // EI_CLASS: 64-bit
//! elf[5] = 1; // EI_DATA: little-endian
//! elf[6] = 1; // EI_VERSION
//! elf[16] = 3; // e_type: ET_DYN
//! elf[18] = 62; // e_machine: x86_64
//! elf[20] = 1; // e_version
//! elf[52] = 64; // e_ehsize
//! elf[54] = 56; // e_phentsize
//! let container = fatelf::join(&[&elf])?;
//!
//! // No record for aarch64: the error lists what the container holds.
//! let error = validate_for(&container, ElfTarget::aarch64(4096)).unwrap_err();
//! assert!(matches!(&error, EmbeddedElfError::NoMatchingRecord { found, .. } if found.len() == 1));
//!
//! // The x86_64 record is found, and refused: nothing in it can be loaded.
//! let error = validate_for(&container, ElfTarget::x86_64(4096)).unwrap_err();
//! assert!(matches!(error, EmbeddedElfError::NoLoadSegments { program_header_count: 0 }));
//! # Ok::<(), EmbeddedElfError>(())
//! ```

mod error;
pub mod fatelf;
pub mod functions;
mod image;
mod map;
mod plan;
mod relocation;
mod symbols;
mod target;
mod validate;

pub use error::EmbeddedElfError;
pub use fatelf::FatElfRecord;
pub use functions::{ImageFunction, function_at, image_functions};
pub use image::{ElfImage, ReadableRanges};
pub use plan::{ElfPlan, PlannedSegment, SegmentFlags, SymbolHashTable};
pub use target::{ElfTarget, LIBRARY_QUERY_SYMBOL, QUERY_SYMBOL, host_machine};
pub use validate::{MAX_IMAGE_SIZE, validate, validate_for};
