//! A shared library opened by the OS loader, from a file or from bytes.

use std::ffi::CStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use dlopen2::raw::Library;
use xplug_abi::{
    EXPORT_NAME, EXPORTS_LIST_NAME, ExportsListFn, LOAD_ERROR_NAME, LoadErrorFn, PARAMS_LIST_NAME, ParamDecl,
    ParamsListFn, QueryFn,
};

use super::RawQuery;
use crate::{Error, LoaderError};

/// The hint attached to a missing query export.
const EXPORT_HINT: &str = "an xplug-sdk plugin crate exports it from its `cdylib`: declare \
                           `[lib] crate-type = [\"cdylib\", \"rlib\"]`, leave its `static` feature off \
                           and build with `cargo build --release` (the library is \
                           `target/release/lib<crate>.so`); a C plugin must export it with C linkage \
                           and default visibility";

/// More names than any real plugin exports: a larger count from
/// `xplug_plugin_exports` is garbage and the list is ignored.
pub const MAX_LISTED_EXPORTS: usize = 1 << 20;

/// More load parameters than any real plugin declares: a larger count from
/// `xplug_plugin_params` is garbage and the declaration is ignored.
pub const MAX_DECLARED_PARAMS: usize = 1 << 12;

/// One load parameter a plugin declares through `xplug_plugin_params`,
/// copied out of the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// The key.
    pub name: String,
    /// The value's type as the plugin names it (`f32`, `str`, ...).
    pub kind: String,
    /// The value used when the key is absent, if any.
    pub default: Option<String>,
    /// What the parameter does.
    pub description: String,
}

/// A plugin library opened by the OS loader (`dlopen`), the first step of
/// hosting a system-library plugin.
///
/// Trust is placed once, when the library is opened ([`RawLibrary::open`],
/// [`RawLibrary::open_image`]): the caller promises the file is a v0
/// plugin, and the safe methods rely on that promise. [`RawLibrary::query`]
/// borrows the library, so no query function, table or instance obtained
/// through it can outlive it.
///
/// ```no_run
/// use xplug_providers::abi::Version;
/// use xplug_providers::raw::RawLibrary;
///
/// // SAFETY: the file is a v0 plugin the operator chose.
/// let library = unsafe { RawLibrary::open("target/plugins/release/libc_sample.so") }?;
/// let table = library.query()?.query(Version::LATEST).expect("the plugin speaks v0.1");
/// println!("{:?}", table.header());
/// # Ok::<(), xplug_providers::Error>(())
/// ```
pub struct RawLibrary {
    /// Dropped first: the library closes before the memory file goes.
    library: Library,
    /// How messages name the library: its path, or `memory image `name``.
    shown: PathBuf,
    /// The in-memory file behind an image, open for the library's life so
    /// that no later image can get the same `/proc/self/fd/N` name (the OS
    /// loader would hand out the already-open library for it).
    #[cfg(target_os = "linux")]
    _memory_file: Option<std::fs::File>,
    /// The temporary file behind an image where there is no `memfd_create`.
    #[cfg(not(target_os = "linux"))]
    _memory_file: Option<tempfile::NamedTempFile>,
}

impl std::fmt::Debug for RawLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawLibrary").field("path", &self.shown).finish_non_exhaustive()
    }
}

impl RawLibrary {
    /// Opens the shared library at `path`.
    ///
    /// # Errors
    /// - [`Error::FileNotFound`] when nothing is at `path`; [`Error::Io`]
    ///   when it cannot be read;
    /// - [`Error::NotSharedObject`] for a file that is not a shared library
    ///   (ELF platforms read the header to say what it is instead);
    /// - [`Error::WrongArchitecture`] for an ELF built for another machine;
    /// - [`Error::LibraryOpen`] when the OS loader refuses it (missing
    ///   dependencies, unresolved symbols...), with the loader's message as
    ///   its source.
    ///
    /// # Safety
    /// Opening a library runs its initialisers, and the safe methods of the
    /// result call into it: the file must be a v0 plugin whose query export,
    /// table and functions obey the v0 ABI (`docs/abi.md`), whose
    /// `xplug_plugin_exports`, if present, has [`ExportsListFn`]'s contract,
    /// and whose initialisers and finalisers are sound to run here.
    ///
    /// # Thread-safety
    /// Any thread, concurrently. The OS loader maps a file once per process:
    /// opening the same path twice gives two handles to one copy of the
    /// library's globals.
    ///
    /// # Platform-specific behaviour
    /// `dlopen(RTLD_LOCAL | RTLD_LAZY)` on Unix, `LoadLibraryW` on Windows.
    /// A bare file name (no directory: `libfoo.so`) is searched for as the
    /// OS loader searches (`LD_LIBRARY_PATH`, the loader cache, the system
    /// directories; on Linux not the current directory: write
    /// `./libfoo.so` for that); any other relative path is relative to the
    /// current directory. When the OS loader refuses
    /// the file, its ELF header is read to report the precise cause (ELF
    /// platforms only).
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        // Passed to the OS loader as given: a bare name (`libfoo.so`, no
        // directory) is searched for as `dlopen` searches (LD_LIBRARY_PATH,
        // the cache, the system directories; not the current directory), as
        // IREE does; a path with a directory names that file.
        let library = Library::open(path).map_err(|error| {
            if is_bare_name(path) {
                // There is no one file to read: the loader's search failed.
                return Error::LibraryNotFound { name: path.to_path_buf(), cause: loader_error(&error) };
            }
            // The success path costs exactly one `dlopen`; only a failure pays
            // for reading the file, to name the precise cause as a typed error.
            match read_head(path).and_then(|head| check_image(path, &head)) {
                Err(precise) => precise,
                Ok(()) => Error::LibraryOpen { path: path.to_path_buf(), cause: loader_error(&error) },
            }
        })?;
        Ok(Self { library, shown: path.to_path_buf(), _memory_file: None })
    }

    /// Opens the bytes of a shared library, as if read from a file called
    /// `name`.
    ///
    /// # Errors
    /// As [`Self::open`], with `memory image `name`` in place of a path;
    /// [`Error::Io`] when the in-memory file cannot be created.
    ///
    /// # Safety
    /// As [`Self::open`]: the bytes must be a trusted v0 plugin.
    ///
    /// # Thread-safety
    /// Any thread, concurrently. Every call maps a fresh copy of the image,
    /// so two images never share globals, even with identical bytes.
    ///
    /// # Platform-specific behaviour
    /// On Linux the image is written to an anonymous `memfd_create` file
    /// opened through `/proc/self/fd/N` (needs `/proc`), kept open while the
    /// library is; nothing touches the file system. Elsewhere it is written
    /// to a temporary file that lives as long as the library.
    pub unsafe fn open_image(name: &str, bytes: &[u8]) -> Result<Self, Error> {
        let shown = PathBuf::from(format!("memory image `{name}`"));
        check_image(&shown, bytes)?;
        open_memory_image(name, shown, bytes)
    }

    /// The path the library was opened from (`memory image `name`` for an
    /// image).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The plugin's query export, `iree_hal_executable_plugin_query`.
    ///
    /// # Errors
    /// [`Error::MissingExport`] when the library does not export it, with a
    /// hint that works for any plugin crate.
    pub fn query(&self) -> Result<RawQuery<'_>, Error> {
        // SAFETY: `QueryFn` is a pointer-sized function pointer type; the
        // export has that type by the v0 contract the opener vouched for.
        let query = unsafe { self.library.symbol_cstr::<QueryFn>(EXPORT_NAME) }.map_err(|_| {
            Error::MissingExport {
                path: self.shown.clone(),
                symbol: EXPORT_NAME.to_string_lossy().into_owned(),
                hint: EXPORT_HINT,
            }
        })?;
        // SAFETY: the export obeys the v0 query contract (promised at open)
        // and its code stays mapped while `self` is borrowed.
        Ok(unsafe { RawQuery::new(query) })
    }

    /// The import names the library lists through xplug's optional
    /// `xplug_plugin_exports` export (every `xplug-sdk` shared library has
    /// it), copied; `None` when it has no such export, returns NULL, or
    /// claims more than [`MAX_LISTED_EXPORTS`] names. NULL entries are
    /// skipped.
    #[must_use]
    pub fn exports(&self) -> Option<Vec<String>> {
        // SAFETY: `ExportsListFn` is a pointer-sized function pointer type;
        // the export has that type by the contract the opener vouched for.
        let list = unsafe { self.library.symbol_cstr::<ExportsListFn>(EXPORTS_LIST_NAME) }.ok()?;
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let names = unsafe { list(&mut count) };
        if names.is_null() || count > MAX_LISTED_EXPORTS {
            return None;
        }
        // SAFETY: the export returned `count` name pointers valid while the
        // library is open (it is borrowed for this call).
        let names = unsafe { std::slice::from_raw_parts(names, count) };
        Some(
            names
                .iter()
                .filter(|name| !name.is_null())
                // SAFETY: each non-NULL entry is a NUL-terminated string of
                // the library's (the export's contract).
                .map(|&name| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
                .collect(),
        )
    }
}

impl RawLibrary {
    /// The plugin's own message for the last `load` it refused on this
    /// thread, through xplug's optional `xplug_plugin_load_error` export
    /// (`xplug-sdk` plugins have it); `None` without the export or message.
    /// Call it right after the refused `load`, on the same thread.
    #[must_use]
    pub fn load_error(&self) -> Option<String> {
        // SAFETY: `LoadErrorFn` is a pointer-sized function pointer type;
        // the export has that type by the contract the opener vouched for.
        let function = unsafe { self.library.symbol_cstr::<LoadErrorFn>(LOAD_ERROR_NAME) }.ok()?;
        // SAFETY: the export's contract: no arguments, any thread.
        let message = unsafe { function() };
        // SAFETY: non-NULL: a NUL-terminated string of the library's, valid
        // until the next `load` on this thread (none runs meanwhile).
        (!message.is_null()).then(|| unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned())
    }

    /// The load parameters the library declares through xplug's optional
    /// `xplug_plugin_params` export, copied; `None` when it has no such
    /// export, returns NULL with a non-zero count, or claims more than
    /// [`MAX_DECLARED_PARAMS`]. Entries without a name are skipped. A
    /// plugin with the export refuses keys it does not declare.
    #[must_use]
    pub fn params(&self) -> Option<Vec<ParamInfo>> {
        // SAFETY: `ParamsListFn` is a pointer-sized function pointer type;
        // the export has that type by the contract the opener vouched for.
        let list = unsafe { self.library.symbol_cstr::<ParamsListFn>(PARAMS_LIST_NAME) }.ok()?;
        let mut count = 0usize;
        // SAFETY: the export's contract; `count` is a valid out-pointer.
        let decls = unsafe { list(&mut count) };
        if count == 0 {
            return Some(Vec::new());
        }
        if decls.is_null() || count > MAX_DECLARED_PARAMS {
            return None;
        }
        // SAFETY: the export returned `count` declarations valid while the
        // library is open (it is borrowed for this call).
        let decls: &[ParamDecl] = unsafe { std::slice::from_raw_parts(decls, count) };
        let text = |pointer: *const std::ffi::c_char| {
            // SAFETY: each non-NULL field is a NUL-terminated string of the
            // library's (the export's contract).
            (!pointer.is_null()).then(|| unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
        };
        Some(
            decls
                .iter()
                .filter_map(|decl| {
                    Some(ParamInfo {
                        name: text(decl.name)?,
                        kind: text(decl.kind).unwrap_or_default(),
                        default: text(decl.default_value),
                        description: text(decl.description).unwrap_or_default(),
                    })
                })
                .collect(),
        )
    }
}

/// True for a name without any directory part (`libfoo.so`), which the OS
/// loader searches for.
fn is_bare_name(path: &Path) -> bool {
    let mut components = path.components();
    matches!((components.next(), components.next()), (Some(std::path::Component::Normal(_)), None))
        && !path.as_os_str().to_string_lossy().contains(std::path::MAIN_SEPARATOR)
}

fn loader_error(error: &dlopen2::Error) -> LoaderError {
    LoaderError::new(match error {
        dlopen2::Error::OpeningLibraryError(cause) | dlopen2::Error::SymbolGettingError(cause) => {
            cause.to_string()
        }
        other => other.to_string(),
    })
}

/// The first bytes of `path` (enough for an ELF header).
fn read_head(path: &Path) -> Result<Vec<u8>, Error> {
    let io = |error: std::io::Error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            Error::FileNotFound { path: path.to_path_buf() }
        } else {
            Error::io(format!("cannot read plugin library {}", path.display()), error)
        }
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(Error::NotSharedObject {
            path: path.to_path_buf(),
            reason: "it is not a regular file (a directory?); pass the path of a shared library".to_owned(),
        });
    }
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path).map_err(io)?.take(64).read_to_end(&mut head).map_err(io)?;
    Ok(head)
}

/// True on platforms whose shared libraries are ELF files.
const ELF_PLATFORM: bool = cfg!(all(unix, not(target_vendor = "apple")));

const ET_DYN: u16 = 3;

/// The ELF `e_machine` of this process, when known.
const HOST_MACHINE: Option<u16> = if cfg!(target_arch = "x86_64") {
    Some(62)
} else if cfg!(target_arch = "aarch64") {
    Some(183)
} else if cfg!(target_arch = "x86") {
    Some(3)
} else if cfg!(target_arch = "arm") {
    Some(40)
} else if cfg!(any(target_arch = "riscv64", target_arch = "riscv32")) {
    Some(243)
} else if cfg!(target_arch = "powerpc64") {
    Some(21)
} else if cfg!(target_arch = "powerpc") {
    Some(20)
} else if cfg!(target_arch = "s390x") {
    Some(22)
} else if cfg!(target_arch = "loongarch64") {
    Some(258)
} else {
    None
};

/// A human name for an ELF `e_machine` value.
fn machine_name(machine: u16) -> String {
    match machine {
        3 => "x86".to_owned(),
        8 => "mips".to_owned(),
        20 => "powerpc".to_owned(),
        21 => "powerpc64".to_owned(),
        22 => "s390x".to_owned(),
        40 => "arm".to_owned(),
        62 => "x86_64".to_owned(),
        183 => "aarch64".to_owned(),
        243 => "riscv".to_owned(),
        258 => "loongarch".to_owned(),
        other => format!("ELF machine {other}"),
    }
}

fn describe(machine: u16, class: u8, data: u8) -> String {
    let bits = match class {
        1 => "32-bit",
        2 => "64-bit",
        _ => "unknown class",
    };
    let endian = match data {
        1 => "little-endian",
        2 => "big-endian",
        _ => "unknown byte order",
    };
    format!("{} ({bits}, {endian})", machine_name(machine))
}

/// Checks that `head` starts a shared library for this machine (ELF
/// platforms only; elsewhere the OS loader judges).
fn check_image(path: &Path, head: &[u8]) -> Result<(), Error> {
    if !ELF_PLATFORM {
        return Ok(());
    }
    let not_shared =
        |reason: &str| Error::NotSharedObject { path: path.to_path_buf(), reason: reason.to_owned() };
    if !head.starts_with(b"\x7fELF") {
        return Err(not_shared(if head.starts_with(b"!<arch>") {
            "it is a static archive (.a); link the plugin as a shared library with -shared"
        } else if head.starts_with(b"MZ") {
            "it is a Windows PE file; build the plugin for this platform"
        } else if head.is_empty() {
            "the file is empty; pass a shared library built with -shared"
        } else {
            "it does not start with the ELF magic bytes; pass a shared library built with -shared"
        }));
    }
    if head.len() < 20 {
        return Err(not_shared("its ELF header is truncated; rebuild the library"));
    }
    let (class, data) = (head[4], head[5]);
    let read_u16 = |offset: usize| {
        let bytes = [head[offset], head[offset + 1]];
        if data == 2 { u16::from_be_bytes(bytes) } else { u16::from_le_bytes(bytes) }
    };
    let (kind, machine) = (read_u16(16), read_u16(18));
    let host_class = if cfg!(target_pointer_width = "64") { 2 } else { 1 };
    let host_data = if cfg!(target_endian = "big") { 2 } else { 1 };
    let machine_differs = HOST_MACHINE.is_some_and(|host| host != machine);
    if class != host_class || data != host_data || machine_differs {
        return Err(Error::WrongArchitecture {
            path: path.to_path_buf(),
            found: describe(machine, class, data),
            expected: describe(HOST_MACHINE.unwrap_or(machine), host_class, host_data),
        });
    }
    if kind != ET_DYN {
        let what = match kind {
            1 => "a relocatable object (.o)",
            2 => "an executable",
            4 => "a core dump",
            _ => "an ELF file of unknown type",
        };
        return Err(not_shared(&format!("it is {what}, not a shared library; link the plugin with -shared")));
    }
    Ok(())
}

/// Writes `bytes` to an anonymous in-memory file and opens it.
#[cfg(target_os = "linux")]
fn open_memory_image(name: &str, shown: PathBuf, bytes: &[u8]) -> Result<RawLibrary, Error> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    let io = |what: &str, error: std::io::Error| {
        Error::io(format!("cannot {what} for plugin {}", shown.display()), error)
    };
    let memfd_name = std::ffi::CString::new(format!("xplug:{}", name.replace('\0', "_")))
        .unwrap_or_else(|_| std::ffi::CString::from(c"xplug:plugin"));
    // SAFETY: `memfd_name` is a valid NUL-terminated string; the call has no
    // other preconditions.
    let fd = unsafe { libc::memfd_create(memfd_name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io("create an in-memory file (memfd_create)", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a freshly created descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes).map_err(|error| io("write the in-memory file", error))?;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let library = Library::open(&proc_path)
        .map_err(|error| Error::LibraryOpen { path: shown.clone(), cause: loader_error(&error) })?;
    // The descriptor stays open as long as the library: while it is, no
    // other image gets its number, so the loader never mistakes a new image
    // for this already-open one.
    Ok(RawLibrary { library, shown, _memory_file: Some(file) })
}

/// Writes `bytes` to a temporary file and opens it.
#[cfg(not(target_os = "linux"))]
fn open_memory_image(name: &str, shown: PathBuf, bytes: &[u8]) -> Result<RawLibrary, Error> {
    use std::io::Write;

    let io = |what: &str, error: std::io::Error| {
        Error::io(format!("cannot {what} for plugin {}", shown.display()), error)
    };
    let suffix = format!(".{}", std::env::consts::DLL_EXTENSION);
    let safe_name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let mut file = tempfile::Builder::new()
        .prefix(&format!("xplug-{safe_name}-"))
        .suffix(&suffix)
        .tempfile()
        .map_err(|error| io("create a temporary file", error))?;
    file.write_all(bytes).map_err(|error| io("write the temporary file", error))?;
    file.flush().map_err(|error| io("write the temporary file", error))?;
    let library = Library::open(file.path())
        .map_err(|error| Error::LibraryOpen { path: shown.clone(), cause: loader_error(&error) })?;
    Ok(RawLibrary { library, shown, _memory_file: Some(file) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(class: u8, data: u8, kind: u16, machine: u16) -> Vec<u8> {
        let mut head = vec![0u8; 64];
        head[..4].copy_from_slice(b"\x7fELF");
        head[4] = class;
        head[5] = data;
        head[6] = 1;
        let (kind, machine) = if data == 2 {
            (kind.to_be_bytes(), machine.to_be_bytes())
        } else {
            (kind.to_le_bytes(), machine.to_le_bytes())
        };
        head[16..18].copy_from_slice(&kind);
        head[18..20].copy_from_slice(&machine);
        head
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn elf_header_checks() {
        let path = Path::new("lib.so");
        assert!(check_image(path, &elf(2, 1, ET_DYN, 62)).is_ok());
        let error = check_image(path, &elf(2, 1, ET_DYN, 183)).unwrap_err();
        assert!(
            matches!(&error, Error::WrongArchitecture { found, expected, .. }
            if found.starts_with("aarch64") && expected.starts_with("x86_64")),
            "{error}"
        );
        assert!(matches!(check_image(path, &elf(1, 1, ET_DYN, 3)), Err(Error::WrongArchitecture { .. })));
        assert!(matches!(check_image(path, &elf(2, 2, ET_DYN, 62)), Err(Error::WrongArchitecture { .. })));
        let error = check_image(path, &elf(2, 1, 1, 62)).unwrap_err();
        assert!(error.to_string().contains("relocatable object"), "{error}");
        let error = check_image(path, b"!<arch>\nstuff").unwrap_err();
        assert!(error.to_string().contains("static archive"), "{error}");
        let error = check_image(path, b"\x7fELF\x02").unwrap_err();
        assert!(error.to_string().contains("truncated"), "{error}");
        assert!(matches!(check_image(path, b""), Err(Error::NotSharedObject { .. })));
    }
}
