//! Debugging services for the plugin code xplug loads
//! (`docs/src/operating/debugging.md`): the fatal-signal reporter and the
//! [`FaultReport`] it leaves ([`crash`]), GDB's JIT interface ([`gdb`]) and
//! perf's map ([`perf`]).
//!
//! # One hook
//! The services learn about code through one call: a loader that has made
//! plugin code runnable calls [`code_mapped`] with a [`MappedRegion`], and
//! keeps the [`CodeAnnouncement`] it returns until just before the code is
//! unmapped (dropping it is the "unmapped" half of the hook). Two loaders
//! call it, both in `xplug-providers`: the embedded-ELF loader for each
//! image `xplug-elf` mapped ([`MappedRegion::elf_image`]), and the
//! system-library loader for each `.so` the OS loader opened
//! ([`MappedRegion::system_library`]). `xplug-elf` itself stays format,
//! validation and mapping only: it knows nothing of signals, debuggers or
//! profilers.
//!
//! Each service decides what it wants of a region:
//!
//! | service | embedded image | system library | on |
//! |---|---|---|---|
//! | crash table ([`crash`]) | yes | yes (the OS loader does not name a plugin's functions in a signal handler) | after [`install_crash_reporter`] |
//! | GDB JIT ([`gdb`]) | yes | no: debuggers read the OS loader's list | by default ([`gdb::GDB_JIT_ENV`]) |
//! | perf map ([`perf`]) | yes | no: perf reads the `.so` file | opt-in ([`perf::PERF_MAP_ENV`]) |
//!
//! When no service wants the region, nothing is read: the symbol table is
//! parsed only for a service that uses it.
//!
//! # Example
//!
//! ```
//! use xplug_debug::{MappedRegion, code_mapped, install_crash_reporter};
//!
//! // Once, at start: a crash inside announced code is then reported with
//! // the function and the file it hit.
//! install_crash_reporter(None)?;
//! // A loader announces code it made runnable. Here: the shared library
//! // that holds `getpid`, as if it were a plugin opened by the OS loader.
//! let announced = code_mapped(MappedRegion::system_library("libc.so.6", libc::getpid as usize));
//! assert!(announced.is_listed()); // in the crash reporter's table
//! drop(announced); // withdrawn before the code goes
//! # Ok::<(), xplug_debug::DebugError>(())
//! ```
//!
//! An embedded ELF image, mapped by `xplug-elf`, is announced the same way
//! (not run here: it needs a `.sos` file):
//!
//! ```no_run
//! use xplug_debug::{MappedRegion, code_mapped};
//! use xplug_elf::ElfImage;
//!
//! let bytes = std::fs::read("plugin.sos")?;
//! let image = ElfImage::load(&bytes)?;
//! // Announced to gdb (on by default), perf and the crash table (when on).
//! let announced = code_mapped(MappedRegion::elf_image("plugin.sos", &image, &bytes));
//! // ... run the plugin ...
//! drop(announced); // withdrawn before the code goes
//! drop(image);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod crash;
mod error;
pub mod gdb;
pub mod perf;

pub use crash::{CodeLocation, FaultReport, crash_reporter_installed, install_crash_reporter};
pub use error::DebugError;

use xplug_elf::{ElfImage, image_functions};

/// Code a loader has just made runnable, as [`code_mapped`] is told of it.
#[derive(Clone, Copy, Debug)]
pub struct MappedRegion<'a> {
    /// How reports name the code (its file name, say).
    name: &'a str,
    kind: RegionKind<'a>,
}

#[derive(Clone, Copy, Debug)]
enum RegionKind<'a> {
    /// An image xplug mapped itself: its executable span, the address of
    /// its first page, and the ELF (not the container) its functions are
    /// read from, whose virtual address `base_vaddr` lies at `base`.
    Image { code: (usize, usize), base: usize, elf: &'a [u8], base_vaddr: u64 },
    /// A shared library the OS loader mapped, found by any address of its
    /// code.
    SystemLibrary { address: usize },
}

impl<'a> MappedRegion<'a> {
    /// An embedded ELF image, mapped by [`ElfImage::load`] (or
    /// [`ElfImage::load_with_query`]) from `bytes` (the same bytes: one ELF
    /// or the FatELF container; its functions are read from them). Bytes
    /// other than the image's own give it no function names, nothing
    /// worse.
    #[must_use]
    pub fn elf_image(name: &'a str, image: &ElfImage, bytes: &'a [u8]) -> Self {
        let plan = image.plan();
        let code = image.code_range();
        Self {
            name,
            kind: RegionKind::Image {
                code: (code.start, code.end),
                base: image.base(),
                elf: bytes.get(plan.elf()).unwrap_or_default(),
                base_vaddr: plan.base_vaddr(),
            },
        }
    }

    /// A shared library the OS loader opened, found by `address`, any
    /// address inside its code (its query function, say); its functions
    /// are read from its file.
    #[must_use]
    pub fn system_library(name: &'a str, address: usize) -> Self {
        Self { name, kind: RegionKind::SystemLibrary { address } }
    }
}

/// What the services hold for one region ([`code_mapped`]); dropping it
/// withdraws the region from every one of them. Drop it before the code
/// is unmapped.
#[derive(Debug, Default)]
#[must_use = "dropping the announcement withdraws the code from the debugging services at once"]
pub struct CodeAnnouncement {
    /// The entry of the fatal-signal reporter's table.
    crash: Option<crash::CodeRegistration>,
    /// The entry of GDB's JIT interface.
    gdb: Option<gdb::GdbRegistration>,
}

impl CodeAnnouncement {
    /// Whether any service listed the region (the crash table, or gdb).
    #[must_use]
    pub fn is_listed(&self) -> bool {
        self.crash.is_some() || self.gdb.is_some()
    }
}

/// The "code mapped" hook: tells every debugging service that is on about
/// `region`. The result is the "unmapped" half: keep it while the code is
/// mapped.
///
/// Best effort: a service that cannot take the region (a full crash
/// table, an unwritable perf map) leaves it out, and the code runs all
/// the same.
pub fn code_mapped(region: MappedRegion<'_>) -> CodeAnnouncement {
    let mut announcement = CodeAnnouncement::default();
    match region.kind {
        RegionKind::Image { code, base, elf, base_vaddr } => {
            let crash = crash_reporter_installed();
            let perf = perf::enabled();
            let gdb = gdb::enabled();
            if crash || perf || gdb {
                let functions = image_functions(elf, base_vaddr);
                if crash {
                    announcement.crash = crash::register_code(region.name, code, base, &functions);
                }
                if perf {
                    let _ = perf::append(base, &functions);
                }
                if gdb {
                    let object = gdb::symbol_file(region.name, code, base, &functions);
                    announcement.gdb = Some(gdb::register(object));
                }
            }
        }
        RegionKind::SystemLibrary { address } => {
            announcement.crash = crash::register_loaded_library(address, Some(region.name));
        }
    }
    announcement
}
