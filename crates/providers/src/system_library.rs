//! Plugins in shared libraries opened by the OS loader (`dlopen`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dlopen2::raw::Library;
use std::ffi::CStr;

use xplug_abi::{EXPORT_NAME, EXPORTS_LIST_NAME, ExportsListFn, Features, QueryFn};

use crate::plugin::{LoadSite, load_v0};
use crate::{Error, LoadParams, Plugin, PluginSource};

/// The hint attached to a missing query export.
const EXPORT_HINT: &str = "if this is an xplug-sdk plugin, build it with `cargo xtask build-plugins` \
                           so the export is switched on; a C plugin must export it with C linkage and \
                           default visibility";

/// An open library (and, where the image came from memory without
/// `memfd_create`, the temporary file backing it). Field order matters: the
/// library closes before the file is removed.
struct OpenLibrary {
    _library: Library,
    #[cfg(not(target_os = "linux"))]
    _file: Option<tempfile::NamedTempFile>,
}

/// Loader for plugins in shared libraries (`.so`, `.dylib`, `.dll`).
///
/// Each loaded [`Plugin`] keeps the library open (through a reference
/// count) until it is dropped, after its `unload` ran.
///
/// ```no_run
/// use xplug_providers::{LoadParams, SystemLibraryPlugin};
///
/// let params = LoadParams::new().with("scale", "2");
/// // SAFETY: the library is a trusted v0 plugin.
/// let plugin = unsafe { SystemLibraryPlugin::load_from_file("plugins/libmy_plugin.so", &params) }?;
/// println!("loaded {} ({})", plugin.name(), plugin.info().description);
/// # Ok::<(), xplug_providers::Error>(())
/// ```
#[derive(Debug)]
pub struct SystemLibraryPlugin;

impl SystemLibraryPlugin {
    /// Opens the shared library at `path`, finds its
    /// `iree_hal_executable_plugin_query` export and loads the plugin (the
    /// checks of `docs/loading.md#load-checks`, then its `load` with
    /// `params`).
    ///
    /// # Errors
    /// - [`Error::FileNotFound`] when nothing is at `path`; [`Error::Io`]
    ///   when it cannot be read;
    /// - [`Error::NotSharedObject`] for a file that is not a shared library
    ///   (ELF platforms check the header before the OS loader sees it);
    /// - [`Error::WrongArchitecture`] for an ELF built for another machine;
    /// - [`Error::LibraryOpen`] when the OS loader refuses it (missing
    ///   dependencies, unresolved symbols...);
    /// - [`Error::MissingExport`] when the query export is absent;
    /// - then the errors of [`crate::StaticPlugin::from_query`].
    ///
    /// # Safety
    /// Opening a library runs its initialisers and the plugin's functions,
    /// which safe Rust cannot check. The file must be a v0 plugin whose
    /// query export, table and functions obey the v0 ABI, and whose
    /// initialisers and finalisers are sound to run in this process.
    ///
    /// # Thread-safety
    /// May be called from any thread, concurrently. The OS loader opens a
    /// file once per process: loading the same path twice yields two plugin
    /// instances sharing one copy of the library's globals, so its `load`
    /// must tolerate that.
    ///
    /// # Platform-specific behaviour
    /// Uses `dlopen(RTLD_LOCAL | RTLD_LAZY)` on Unix and `LoadLibraryW` on
    /// Windows. A relative path is opened relative to the current directory
    /// (never searched in the loader's library path). When the OS loader
    /// refuses the file, its ELF header is read to report the precise cause;
    /// that check runs on ELF platforms only (Linux, the BSDs...); elsewhere
    /// such files are reported as [`Error::LibraryOpen`].
    pub unsafe fn load_from_file(path: impl AsRef<Path>, params: &LoadParams) -> Result<Plugin, Error> {
        let path = path.as_ref();
        // `dlopen` searches the library path for names without a slash; a
        // file name given by the caller means the file here.
        let open_path = if path.is_relative() { Path::new(".").join(path) } else { path.to_path_buf() };
        let library = Library::open(&open_path).map_err(|error| {
            // The success path costs exactly one `dlopen`; only a failure pays
            // for reading the file, to name the precise cause (missing file,
            // not a shared object, another architecture) as a typed error.
            let diagnosis = read_head(path).and_then(|head| check_image(path, &head));
            match diagnosis {
                Err(precise) => precise,
                Ok(()) => Error::LibraryOpen { path: path.to_path_buf(), cause: loader_cause(&error) },
            }
        })?;
        let holder = OpenLibrary {
            _library: library,
            #[cfg(not(target_os = "linux"))]
            _file: None,
        };
        // SAFETY: forwarded to the caller.
        unsafe {
            load_library(
                holder,
                path.to_path_buf(),
                path.display().to_string(),
                PluginSource::SystemLibrary { path: path.to_path_buf() },
                params,
            )
        }
    }

    /// Loads a plugin from the bytes of a shared library, as if `bytes` had
    /// been read from a file called `name`.
    ///
    /// # Errors
    /// As [`Self::load_from_file`], with `memory image `name`` in place of a
    /// path; [`Error::Io`] when the in-memory file cannot be created.
    ///
    /// # Safety
    /// As [`Self::load_from_file`]: the bytes must be a trusted v0 plugin.
    ///
    /// # Thread-safety
    /// May be called from any thread, concurrently. Unlike
    /// [`Self::load_from_file`], every call maps a fresh copy of the image,
    /// so instances do not share globals.
    ///
    /// # Platform-specific behaviour
    /// On Linux the image is written to an anonymous `memfd_create` file and
    /// opened through `/proc/self/fd/N` (needs `/proc`); nothing touches the
    /// file system. Elsewhere it is written to a temporary file that lives
    /// until the plugin is dropped.
    pub unsafe fn load_from_memory(name: &str, bytes: &[u8], params: &LoadParams) -> Result<Plugin, Error> {
        let shown = PathBuf::from(format!("memory image `{name}`"));
        check_image(&shown, bytes)?;
        let holder = open_memory_image(name, &shown, bytes)?;
        // SAFETY: forwarded to the caller.
        unsafe {
            load_library(
                holder,
                shown.clone(),
                shown.display().to_string(),
                PluginSource::Memory { name: name.to_owned() },
                params,
            )
        }
    }
}

/// Looks up the query export and hands over to the v0 loader.
///
/// # Safety
/// As [`SystemLibraryPlugin::load_from_file`].
unsafe fn load_library(
    holder: OpenLibrary,
    path: PathBuf,
    label: String,
    source: PluginSource,
    params: &LoadParams,
) -> Result<Plugin, Error> {
    // SAFETY: `QueryFn` is a pointer-sized function pointer type; the export
    // has that type by the v0 contract the caller vouched for.
    let query =
        unsafe { holder._library.symbol_cstr::<QueryFn>(EXPORT_NAME) }.map_err(|_| Error::MissingExport {
            path: path.clone(),
            symbol: EXPORT_NAME.to_string_lossy().into_owned(),
            hint: EXPORT_HINT.to_owned(),
        })?;
    let file_name =
        path.file_name().map_or_else(|| label.clone(), |name| name.to_string_lossy().into_owned());
    let site = LoadSite {
        origin: format!(" ({label})"),
        label,
        fallback_name: file_name,
        source,
        required_features: Features::NONE,
        loader: "system library",
        keep_alive: Some(Arc::new(holder)),
    };
    let library = site.keep_alive.clone();
    // SAFETY: `query` is the library's v0 export (caller's promise); the
    // library stays open while `site.keep_alive` is held by the plugin.
    let mut plugin = unsafe { load_v0(query, site, params) }?;
    // Only a plugin that passed every load check is asked for its names.
    if let Some(holder) = library.as_deref().and_then(|any| any.downcast_ref::<OpenLibrary>()) {
        // SAFETY: the caller vouched for the library; `xplug_plugin_exports`,
        // when present, has the contract xplug documents for it, and the
        // library is open (held by `plugin` and `library`).
        plugin.set_exports(unsafe { listed_exports(&holder._library) });
    }
    Ok(plugin)
}

/// The names a library lists through `xplug_plugin_exports`, copied, or
/// `None` when it has no such export (C plugins usually do not).
///
/// # Safety
/// When the export exists it must have the [`ExportsListFn`] contract: an
/// array of `*out_count` NUL-terminated strings valid while the library is
/// open.
unsafe fn listed_exports(library: &Library) -> Option<Vec<String>> {
    /// More names than any real plugin has: a larger count is garbage.
    const MAX_EXPORTS: usize = 1 << 20;
    // SAFETY: `ExportsListFn` is a pointer-sized function pointer type; the
    // export has that type by the caller's promise.
    let list = unsafe { library.symbol_cstr::<ExportsListFn>(EXPORTS_LIST_NAME) }.ok()?;
    let mut count = 0usize;
    // SAFETY: the export's contract; `count` is a valid out-pointer.
    let names = unsafe { list(&mut count) };
    if names.is_null() || count > MAX_EXPORTS {
        return None;
    }
    // SAFETY: the export returned `count` name pointers valid while the
    // library (held by `holder`) is open.
    let names = unsafe { std::slice::from_raw_parts(names, count) };
    names
        .iter()
        .map(|&name| {
            // SAFETY: each entry is NULL or a NUL-terminated string of the
            // library's (checked for NULL first).
            (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
        })
        .collect()
}

fn loader_cause(error: &dlopen2::Error) -> String {
    match error {
        dlopen2::Error::OpeningLibraryError(cause) | dlopen2::Error::SymbolGettingError(cause) => {
            cause.to_string()
        }
        other => other.to_string(),
    }
}

/// The first bytes of `path` (enough for an ELF header).
fn read_head(path: &Path) -> Result<Vec<u8>, Error> {
    let io = |error: std::io::Error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            Error::FileNotFound { path: path.to_path_buf() }
        } else {
            Error::Io {
                context: format!("cannot read plugin library {}", path.display()),
                cause: error.to_string(),
            }
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

/// Writes `bytes` where the OS loader can open them and opens them.
#[cfg(target_os = "linux")]
fn open_memory_image(name: &str, shown: &Path, bytes: &[u8]) -> Result<OpenLibrary, Error> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    let io = |what: &str, error: std::io::Error| Error::Io {
        context: format!("cannot {what} for plugin {}", shown.display()),
        cause: error.to_string(),
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
        .map_err(|error| Error::LibraryOpen { path: shown.to_path_buf(), cause: loader_cause(&error) })?;
    // The loader mapped the image; closing our descriptor is fine.
    drop(file);
    Ok(OpenLibrary { _library: library })
}

/// Writes `bytes` where the OS loader can open them and opens them.
#[cfg(not(target_os = "linux"))]
fn open_memory_image(name: &str, shown: &Path, bytes: &[u8]) -> Result<OpenLibrary, Error> {
    use std::io::Write;

    let io = |what: &str, error: std::io::Error| Error::Io {
        context: format!("cannot {what} for plugin {}", shown.display()),
        cause: error.to_string(),
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
        .map_err(|error| Error::LibraryOpen { path: shown.to_path_buf(), cause: loader_cause(&error) })?;
    Ok(OpenLibrary { _library: library, _file: Some(file) })
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
