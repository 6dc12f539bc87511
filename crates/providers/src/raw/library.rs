//! A shared library opened by the OS loader, from a file or from bytes.

use std::ffi::CStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dlopen2::raw::Library;
use xplug_abi::{EXPORT_NAME, EXPORTS_LIST_NAME, QueryFn};

use super::RawQuery;
use super::optional::{ImportLayoutInfo, OptionalExports, ParamDeclInfo};
use super::stage::{self, Stage};
use crate::{CodeBytes, CountingAllocator, Error, Origin, OsLoaderMessage};

/// The hint attached to a missing query export.
const EXPORT_HINT: &str = "an xplug-sdk plugin crate exports it from its `cdylib`: declare \
                           `[lib] crate-type = [\"cdylib\", \"rlib\"]`, leave its `static` feature off \
                           and build with `cargo build --release` (the library is \
                           `target/release/lib<crate>.so`); a C plugin must export it with C linkage \
                           and default visibility";

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
/// let header = table.header().expect("a readable header").expect("a header");
/// assert_eq!(header.name.as_deref(), Some("c_sample"));
/// # Ok::<(), xplug_providers::Error>(())
/// ```
pub struct RawLibrary {
    /// The address of the query export, looked up once when the library
    /// was opened (`None`: not exported, or NULL).
    query_address: Option<usize>,
    /// The library's entry in the debugging services (`xplug-debug`'s
    /// code-mapped hook: the crash reporter's table, when installed),
    /// withdrawn before the library closes.
    crash: Option<xplug_debug::CodeAnnouncement>,
    /// Dropped: the library closes before the memory file goes, and
    /// before the allocators its plugins were given.
    library: Library,
    /// The host allocators of plugins that ran from this library and were
    /// unloaded ([`SystemLibraryLoader::into_library`](crate::SystemLibraryLoader::into_library)): kept until the
    /// library is closed, so its finalisers may still free through them.
    allocators: Vec<Arc<CountingAllocator>>,
    /// Where the library came from: the file, or the image's name.
    origin: Origin,
    /// How messages name the library: its path, or `memory image `name``.
    shown: PathBuf,
    /// The name the OS loader was given (`./file`, `/proc/self/fd/N`), to
    /// reopen it ([`RawLibrary::pin`]).
    #[cfg_attr(not(unix), expect(dead_code, reason = "pinning is a Unix loader feature"))]
    opened_as: PathBuf,
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

impl Drop for RawLibrary {
    fn drop(&mut self) {
        // The library closes right after this (its finalisers run).
        stage::enter(Stage::Close);
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
    /// - [`Error::UndefinedSymbol`] when the library uses a function or
    ///   variable that neither it nor any library it depends on defines
    ///   (every reference is bound at open, not at first call);
    /// - [`Error::LibraryOpen`] when the OS loader refuses it for another
    ///   reason (a missing dependency...), with the loader's message as its
    ///   source.
    ///
    /// # Safety
    /// Opening a library runs its initialisers, and the safe methods of the
    /// result call into it: the file must be a v0 plugin whose query export,
    /// table and functions obey the v0 ABI (`docs/src/reference/abi.md`), whose
    /// `xplug_plugin_exports`, if present, has [`ExportsListFn`](xplug_abi::ExportsListFn)'s contract,
    /// and whose initialisers and finalisers are sound to run here.
    ///
    /// # Thread-safety
    /// Any thread, concurrently. The OS loader maps a file once per process:
    /// opening the same path twice gives two handles to one copy of the
    /// library's globals.
    ///
    /// # Platform-specific behaviour
    /// `dlopen(RTLD_NOW | RTLD_LOCAL)` on Unix, `LoadLibraryW` on Windows:
    /// a library with an unresolvable reference is refused here, instead of
    /// killing the process at the reference's first use
    /// (`docs/src/reference/loading.md#finding-the-query`). A bare file name (no
    /// directory: `libfoo.so`) is searched for as the OS loader searches
    /// (`LD_LIBRARY_PATH`, the loader cache, the system directories; on
    /// Linux not the current directory: write `./libfoo.so` for that); any
    /// other relative path is relative to the current directory. When the OS loader refuses
    /// the file, its ELF header is read to report the precise cause (ELF
    /// platforms only).
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bare = is_bare_name(path);
        if !bare {
            // Only a regular file goes to the loader: it would block forever
            // reading a FIFO or a terminal.
            require_regular_file(path)?;
        }
        // Passed to the OS loader as given: a bare name is searched for as
        // `dlopen` searches, as IREE does; a path with a directory names
        // that file.
        let open_path = path.to_path_buf();
        stage::enter(Stage::Open);
        let library = open_now(&open_path).map_err(|error| {
            if bare {
                // There is no one file to read: the loader's search failed.
                return Error::LibraryNotFound { name: path.to_path_buf(), cause: loader_error(&error) };
            }
            // The success path costs exactly one `dlopen`; only a failure pays
            // for reading the file, to name the precise cause as a typed error.
            match read_head(path).and_then(|head| check_image(path, &head)) {
                Err(precise) => precise,
                Ok(()) => refusal(path, &error),
            }
        })?;
        Ok(Self {
            query_address: None,
            crash: None,
            library,
            allocators: Vec::new(),
            origin: Origin::File(path.to_path_buf()),
            shown: path.to_path_buf(),
            opened_as: open_path,
            _memory_file: None,
        }
        .announced_to_crash_reports())
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
    /// On Linux the image is written to an anonymous `memfd_create` file,
    /// sealed against every change ([`RawLibrary::is_sealed`]) and opened
    /// through `/proc/self/fd/N` (needs `/proc`), kept open while the
    /// library is; nothing touches the file system. Elsewhere it is written
    /// to a temporary file that lives as long as the library.
    pub unsafe fn open_image(name: &str, bytes: &[u8]) -> Result<Self, Error> {
        let shown = PathBuf::from(format!("memory image `{name}`"));
        check_image(&shown, bytes)?;
        let code = CodeBytes::copy_of(name, bytes)?;
        open_memory_image(&code, Origin::Memory(name.to_owned()), shown)
    }

    /// Opens `code`, read from the file at `path` ([`CodeBytes::read_file`]),
    /// as [`RawLibrary::open_image`] opens an image (the sealed in-memory
    /// file on Linux): the file is never opened again, so replacing it
    /// changes nothing. The library's origin and messages name `path`.
    ///
    /// # Safety
    /// As [`Self::open`].
    pub(crate) unsafe fn open_file_bytes(path: &Path, code: &CodeBytes) -> Result<Self, Error> {
        let head = code.head(64).map_err(Error::reading("plugin library", path))?;
        check_image(path, &head)?;
        open_memory_image(code, Origin::File(path.to_path_buf()), path.to_path_buf())
    }

    /// True when the library was opened from an in-memory file sealed
    /// against every change (`F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
    /// F_SEAL_SEAL`, read back with `F_GET_SEALS`): an image, or a file
    /// opened pinned. False for a library opened by path, and off Linux.
    #[must_use]
    pub fn is_sealed(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self._memory_file.as_ref().is_some_and(super::sealed::memfd::is_sealed)
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// The path the library was opened from (`memory image `name`` for an
    /// image).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Where the library came from: the file it was opened from, or the
    /// name given to an image.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Keeps `allocator` (given to a plugin of this library that has been
    /// unloaded) alive until the library is closed.
    pub(crate) fn keep_until_closed(&mut self, allocator: Arc<CountingAllocator>) {
        self.allocators.push(allocator);
    }

    /// The plugin's query export, `iree_hal_executable_plugin_query`.
    ///
    /// # Errors
    /// [`Error::MissingExport`] when the library does not export it, with a
    /// hint that works for any plugin crate; [`Error::NotAFunction`] when
    /// the symbol of that name is not a function ([`SymbolKind`]).
    pub fn query(&self) -> Result<RawQuery<'_>, Error> {
        let missing = || Error::MissingExport {
            path: self.shown.clone(),
            symbol: EXPORT_NAME.to_string_lossy().into_owned(),
            hint: EXPORT_HINT,
        };
        let address = self.query_address.ok_or_else(missing)? as *const ();
        let kind = symbol_kind(address);
        if !kind.may_be_called() {
            return Err(Error::NotAFunction {
                path: self.shown.clone(),
                symbol: EXPORT_NAME.to_string_lossy().into_owned(),
                found: kind.describe(),
            });
        }
        // SAFETY: `QueryFn` is a pointer-sized function pointer type; the
        // export is a function (checked above) with that type by the v0
        // contract the opener vouched for.
        let query = unsafe { std::mem::transmute::<*const (), QueryFn>(address) };
        // SAFETY: the export obeys the v0 query contract (promised at open)
        // and its code stays mapped while `self` is borrowed.
        Ok(unsafe { RawQuery::new(query) })
    }

    /// The import names the library lists through xplug's optional
    /// `xplug_plugin_exports` export (every `xplug-sdk` shared library has
    /// it): [`OptionalExports::exports`].
    ///
    /// The symbol is called only when nothing says it is not a function
    /// ([`SymbolKind`]): a library with a variable of that name, or whose
    /// symbol lies outside executable memory, lists nothing.
    #[must_use]
    pub fn exports(&self) -> Option<Vec<String>> {
        OptionalExports::exports(self)
    }

    /// True when the library has xplug's `xplug_plugin_exports` function,
    /// the mark of a library built with `xplug-sdk` (a Rust library).
    #[must_use]
    pub fn is_xplug_sdk(&self) -> bool {
        self.symbol_address(EXPORTS_LIST_NAME).is_some_and(|address| symbol_kind(address).may_be_called())
    }

    /// Keeps the library's code mapped for the rest of the process, even
    /// after every handle is closed: its finalisers never run and its
    /// memory is never unmapped (`docs/src/reference/loading.md#unload-policy`).
    ///
    /// This is the unload policy for Rust libraries: a Rust library may
    /// have registered thread-local destructors on threads that outlive the
    /// plugin, and unmapping their code would make those threads crash when
    /// they end. Pinning the same library twice is harmless.
    ///
    /// # Errors
    /// [`Error::LibraryOpen`] when the OS loader refuses to pin it.
    ///
    /// # Platform-specific behaviour
    /// `dlopen(RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)` on the already-open
    /// library, then `dlclose` of that extra handle (the flag stays). A
    /// no-op on other platforms.
    pub fn pin(&self) -> Result<(), Error> {
        #[cfg(unix)]
        {
            let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NOLOAD | libc::RTLD_NODELETE;
            let extra = Library::open_with_flags(&self.opened_as, Some(flags)).map_err(|error| {
                Error::LibraryOpen { path: self.shown.clone(), cause: loader_error(&error) }
            })?;
            // Dropping the extra handle closes it; the library stays open
            // through `self.library` and, once that closes, through the flag.
            drop(extra);
        }
        Ok(())
    }

    /// Looks up the query export (once: [`RawLibrary::query`] reads what
    /// was found here), then announces the library, found through that
    /// export, to the debugging services (`xplug_debug::code_mapped`: the
    /// crash reporter's table, when it is installed).
    fn announced_to_crash_reports(mut self) -> Self {
        self.query_address = self.symbol_address(EXPORT_NAME).map(|address| address as usize);
        if let Some(address) = self.query_address {
            let name = match &self.origin {
                Origin::Memory(name) => name.clone(),
                _ => {
                    self.shown.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
                }
            };
            self.crash =
                Some(xplug_debug::code_mapped(xplug_debug::MappedRegion::system_library(&name, address)));
        }
        self
    }

    /// The address the loader gives for `name` in this library; `None` when
    /// it has no such symbol (or it is NULL).
    fn symbol_address(&self, name: &std::ffi::CStr) -> Option<*const ()> {
        // SAFETY: a raw pointer is asked for, nothing is read or called
        // through it here.
        let address = unsafe { self.library.symbol_cstr::<*const ()>(name) }.ok()?;
        (!address.is_null()).then_some(address)
    }
}

/// What the OS loader's symbol table says a symbol is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SymbolKind {
    /// A function (`STT_FUNC` or `STT_GNU_IFUNC`).
    Function,
    /// A variable (`STT_OBJECT`, `STT_TLS`, `STT_COMMON`).
    Data,
    /// Neither, or the symbol's ELF type is one this host does not know.
    Other(u8),
    /// Whatever the symbol table says, its address is not in executable
    /// memory (Linux walks the loader's program headers, `dl_iterate_phdr`).
    NotExecutable,
    /// This platform cannot tell (neither `dladdr1` nor `dl_iterate_phdr`).
    Unknown,
}

impl SymbolKind {
    /// True unless the loader's table says the symbol is not a function.
    fn may_be_called(self) -> bool {
        matches!(self, Self::Function | Self::Unknown)
    }

    /// How an error describes it.
    fn describe(self) -> String {
        match self {
            Self::Function => "a function".to_owned(),
            Self::Data => "a variable".to_owned(),
            Self::Other(kind) => format!("a symbol of ELF type {kind}"),
            Self::NotExecutable => "an address outside executable memory".to_owned(),
            Self::Unknown => "a symbol of unknown kind".to_owned(),
        }
    }
}

/// What the symbol at `address` is: its ELF type from the loader's own
/// symbol table entry ([`elf_symbol_kind`], glibc), then, on Linux, whether
/// the address lies in an executable mapping of this process (a symbol the
/// table calls a function, or whose type cannot be read, must).
fn symbol_kind(address: *const ()) -> SymbolKind {
    let kind = elf_symbol_kind(address);
    if !matches!(kind, SymbolKind::Function | SymbolKind::Unknown) {
        return kind;
    }
    match executable_mapping(address) {
        Some(false) => SymbolKind::NotExecutable,
        Some(true) | None => kind,
    }
}

/// Whether `address` lies in an executable segment of a loaded object:
/// `None` when this cannot be told; `Some(false)` also for an address in no
/// loaded object's segments.
///
/// The loader's own program headers are walked (`dl_iterate_phdr`): no file
/// is read, so the check costs well under a microsecond per symbol.
#[cfg(target_os = "linux")]
fn executable_mapping(address: *const ()) -> Option<bool> {
    /// What the walk looks for and what it found.
    struct Search {
        address: usize,
        executable: Option<bool>,
    }

    /// Called by the loader once per loaded object; stops (non-zero) at the
    /// segment holding the address. Cannot panic: plain arithmetic only.
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `Search` passed to `dl_iterate_phdr` below,
        // borrowed exclusively for the walk; `info` is the loader's valid
        // record for one object during this callback.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's record holds `dlpi_phnum` program headers at
        // `dlpi_phdr`, valid during the callback.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        for header in headers.iter().filter(|header| header.p_type == libc::PT_LOAD) {
            let start = (info.dlpi_addr as usize).wrapping_add(header.p_vaddr as usize);
            let end = start.wrapping_add(header.p_memsz as usize);
            if (start..end).contains(&search.address) {
                search.executable = Some(header.p_flags & libc::PF_X != 0);
                return 1;
            }
        }
        0
    }

    let mut search = Search { address: address.addr(), executable: None };
    // SAFETY: `visit` matches the callback type and only reads the records
    // the loader passes; `search` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut search).cast()) };
    Some(search.executable.unwrap_or(false))
}

/// Elsewhere the mappings are not read.
#[cfg(not(target_os = "linux"))]
fn executable_mapping(_address: *const ()) -> Option<bool> {
    None
}

/// The ELF type of the dynamic symbol at `address`, read from the symbol
/// table entry the loader itself holds for it (`dladdr1(RTLD_DL_SYMENT)`).
///
/// Why this is sound: the entry is the one the loader resolved the name to
/// (its address equals the symbol's), so its type is what the library's
/// linker recorded; a library exporting a variable called
/// `xplug_plugin_exports` is recognised as such instead of having its bytes
/// executed. It guards against mistakes, not malice: a library can lie in
/// its symbol table, and it runs code at open anyway.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn elf_symbol_kind(address: *const ()) -> SymbolKind {
    /// glibc's `RTLD_DL_SYMENT` (`<dlfcn.h>`): `dladdr1` returns the
    /// `ElfW(Sym)` of the symbol.
    const RTLD_DL_SYMENT: libc::c_int = 1;
    const STT_OBJECT: u8 = 1;
    const STT_FUNC: u8 = 2;
    const STT_COMMON: u8 = 5;
    const STT_TLS: u8 = 6;
    const STT_GNU_IFUNC: u8 = 10;

    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let mut entry: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `info` and `entry` are valid out-pointers; `dladdr1` only
    // reads the loader's own tables for `address`.
    let found = unsafe { libc::dladdr1(address.cast(), info.as_mut_ptr(), &mut entry, RTLD_DL_SYMENT) };
    // SAFETY: `dladdr1` filled `info` when it returned non-zero (and it
    // was zeroed before, so it is initialised either way).
    let info = unsafe { info.assume_init() };
    if found == 0 || entry.is_null() || info.dli_saddr.cast_const() != address.cast() {
        return SymbolKind::Unknown;
    }
    // `st_info` follows `st_name` (4 bytes) in an `Elf64_Sym`, and
    // `st_name`, `st_value`, `st_size` (4 bytes each) in an `Elf32_Sym`.
    const ST_INFO_OFFSET: usize = if cfg!(target_pointer_width = "64") { 4 } else { 12 };
    // SAFETY: a non-NULL `entry` points to the loader's `ElfW(Sym)` for
    // the symbol (16 bytes for ELF32, 24 for ELF64), which contains the
    // byte at `ST_INFO_OFFSET`.
    let st_info = unsafe { entry.cast::<u8>().add(ST_INFO_OFFSET).read() };
    match st_info & 0xf {
        STT_FUNC | STT_GNU_IFUNC => SymbolKind::Function,
        STT_OBJECT | STT_COMMON | STT_TLS => SymbolKind::Data,
        other => SymbolKind::Other(other),
    }
}

/// Where the loader has no `dladdr1`, the ELF type cannot be read.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn elf_symbol_kind(_address: *const ()) -> SymbolKind {
    SymbolKind::Unknown
}

/// Opens `path` binding every reference now (`RTLD_NOW | RTLD_LOCAL`).
fn open_now(path: &Path) -> Result<Library, dlopen2::Error> {
    #[cfg(unix)]
    {
        Library::open_with_flags(path, Some(libc::RTLD_NOW | libc::RTLD_LOCAL))
    }
    #[cfg(not(unix))]
    {
        Library::open(path)
    }
}

/// Refuses anything at `path` that is not a regular file (symbolic links
/// are followed).
fn require_regular_file(path: &Path) -> Result<(), Error> {
    let metadata = std::fs::metadata(path).map_err(Error::reading("plugin library", path))?;
    if metadata.is_file() { Ok(()) } else { Err(super::sealed::not_a_regular_file(path, &metadata)) }
}

/// The typed error for a loader refusal: [`Error::UndefinedSymbol`] when
/// the loader names a symbol nothing defines, else [`Error::LibraryOpen`].
fn refusal(shown: &Path, error: &dlopen2::Error) -> Error {
    let cause = loader_error(error);
    match undefined_symbol(cause.message()) {
        Some(symbol) => Error::UndefinedSymbol { path: shown.to_path_buf(), symbol, cause },
        None => Error::LibraryOpen { path: shown.to_path_buf(), cause },
    }
}

/// The symbol in a glibc or musl loader message about an unresolvable
/// reference ("...: undefined symbol: foo", "Error relocating ...: foo:
/// symbol not found").
fn undefined_symbol(message: &str) -> Option<String> {
    if let Some((_, rest)) = message.rsplit_once("undefined symbol: ") {
        let symbol = rest.split([',', ' ', '\n', '\t']).next().unwrap_or_default();
        return (!symbol.is_empty()).then(|| symbol.to_owned());
    }
    let before = message.strip_suffix(": symbol not found")?;
    let symbol = before.rsplit(": ").next().unwrap_or_default();
    (!symbol.is_empty()).then(|| symbol.to_owned())
}

impl RawLibrary {
    /// The message of the plugin's last refused `load`, through xplug's
    /// optional `xplug_plugin_load_error` export:
    /// [`OptionalExports::load_error`].
    #[must_use]
    pub fn load_error(&self) -> Option<String> {
        OptionalExports::load_error(self)
    }

    /// The load parameters the library declares through xplug's optional
    /// `xplug_plugin_params` export: [`OptionalExports::param_decls`]. A plugin
    /// with the export refuses keys it does not declare.
    #[must_use]
    pub fn param_decls(&self) -> Option<Vec<ParamDeclInfo>> {
        OptionalExports::param_decls(self)
    }
}

// SAFETY: an address is returned only for a symbol the loader's table does
// not call a non-function and that lies in executable memory
// ([`SymbolKind::may_be_called`]); that it has the export's type is the
// promise the opener made (`RawLibrary::open`'s safety contract).
unsafe impl OptionalExports for RawLibrary {
    fn optional_export(&self, name: &CStr) -> Option<*const ()> {
        let address = self.symbol_address(name)?;
        if !symbol_kind(address).may_be_called() {
            tracing::debug!(
                library = %self.shown.display(),
                "`{}` is not a function; it is ignored",
                name.to_string_lossy()
            );
            return None;
        }
        Some(address)
    }
}

impl RawLibrary {
    /// The args layout of each import the library describes through
    /// xplug's optional `xplug_import_layouts` export:
    /// [`OptionalExports::import_layouts`].
    #[must_use]
    pub fn import_layouts(&self) -> Option<Vec<ImportLayoutInfo>> {
        OptionalExports::import_layouts(self)
    }
}

/// True for a name without any directory part (`libfoo.so`), which the OS
/// loader searches for.
pub(crate) fn is_bare_name(path: &Path) -> bool {
    let mut components = path.components();
    matches!((components.next(), components.next()), (Some(std::path::Component::Normal(_)), None))
        && !path.as_os_str().to_string_lossy().contains(std::path::MAIN_SEPARATOR)
}

fn loader_error(error: &dlopen2::Error) -> OsLoaderMessage {
    OsLoaderMessage::new(match error {
        dlopen2::Error::OpeningLibraryError(cause) | dlopen2::Error::SymbolGettingError(cause) => {
            cause.to_string()
        }
        other => other.to_string(),
    })
}

/// The first bytes of `path` (enough for an ELF header).
fn read_head(path: &Path) -> Result<Vec<u8>, Error> {
    require_regular_file(path)?;
    let io = Error::reading("plugin library", path);
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path).map_err(&io)?.take(64).read_to_end(&mut head).map_err(&io)?;
    Ok(head)
}

/// True on platforms whose shared libraries are ELF files.
const ELF_PLATFORM: bool = cfg!(all(unix, not(target_vendor = "apple")));

const ET_DYN: u16 = object::elf::ET_DYN;

/// The ELF `e_machine` of this process, when known: `xplug-elf` is the one
/// home of ELF machine knowledge.
const HOST_MACHINE: Option<u16> = xplug_elf::host_machine();

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
    format!("{} ({bits}, {endian})", xplug_elf::fatelf::machine_name(machine))
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
    use object::Endianness;
    use object::elf::{ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFDATA2MSB, FileHeader32, FileHeader64};
    use object::read::elf::FileHeader as _;
    let truncated = || not_shared("its ELF header is truncated; rebuild the library");
    // Through `object`'s header types: the 32-bit header's identification,
    // `e_type` and `e_machine` lie where the 64-bit one has them, so it
    // also names the machine of a file of an unknown class.
    let (narrow, _) = object::pod::from_bytes::<FileHeader32<Endianness>>(head).map_err(|()| truncated())?;
    let (class, data) = (narrow.e_ident.class, narrow.e_ident.data);
    let endian = if data == ELFDATA2MSB { Endianness::Big } else { Endianness::Little };
    let (kind, machine) = if class == ELFCLASS64 {
        let (wide, _) =
            object::pod::from_bytes::<FileHeader64<Endianness>>(head).map_err(|()| truncated())?;
        (wide.e_type(endian), wide.e_machine(endian))
    } else {
        (narrow.e_type(endian), narrow.e_machine(endian))
    };
    let host_class = if cfg!(target_pointer_width = "64") { ELFCLASS64 } else { ELFCLASS32 };
    let host_data = if cfg!(target_endian = "big") { ELFDATA2MSB } else { ELFDATA2LSB };
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

/// Opens the sealed in-memory file holding `code` through a name no
/// earlier open has used, then checks that the loader mapped that file
/// ([`loaded::verify`]): the checked bytes are the loaded bytes, whatever
/// the process loaded before.
#[cfg(target_os = "linux")]
fn open_memory_image(code: &CodeBytes, origin: Origin, shown: PathBuf) -> Result<RawLibrary, Error> {
    let file = code.sealed_file().map_err(|error| {
        Error::io(format!("cannot open the in-memory file of plugin {}", shown.display()), error)
    })?;
    let proc_path = loaded::unique_fd_path(&file);
    stage::enter(Stage::Open);
    let library = open_now(&proc_path).map_err(|error| refusal(&shown, &error))?;
    loaded::verify(&library, &file, &proc_path)
        .map_err(|reason| Error::CodeSubstituted { path: shown.clone(), reason })?;
    // The descriptor stays open as long as the library: `is_sealed` reads
    // its seals, and `pin` reopens the library by the same name.
    Ok(RawLibrary {
        query_address: None,
        crash: None,
        library,
        allocators: Vec::new(),
        origin,
        shown,
        opened_as: proc_path,
        _memory_file: Some(file),
    }
    .announced_to_crash_reports())
}

/// Writes `code` to a temporary file and opens it.
#[cfg(not(target_os = "linux"))]
fn open_memory_image(code: &CodeBytes, origin: Origin, shown: PathBuf) -> Result<RawLibrary, Error> {
    use std::io::Write;

    let io = |what: &str, error: std::io::Error| {
        Error::io(format!("cannot {what} for plugin {}", shown.display()), error)
    };
    let suffix = format!(".{}", std::env::consts::DLL_EXTENSION);
    let name = shown.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let safe_name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let mut file = tempfile::Builder::new()
        .prefix(&format!("xplug-{safe_name}-"))
        .suffix(&suffix)
        .tempfile()
        .map_err(|error| io("create a temporary file", error))?;
    file.write_all(code.bytes()).map_err(|error| io("write the temporary file", error))?;
    file.flush().map_err(|error| io("write the temporary file", error))?;
    stage::enter(Stage::Open);
    let library = open_now(file.path()).map_err(|error| refusal(&shown, &error))?;
    Ok(RawLibrary {
        query_address: None,
        crash: None,
        library,
        allocators: Vec::new(),
        origin,
        shown,
        opened_as: file.path().to_path_buf(),
        _memory_file: Some(file),
    }
    .announced_to_crash_reports())
}

/// Which object the OS loader handed out for an in-memory file: the FFI
/// of `dlinfo(RTLD_DI_LINKMAP)` and the mappings in `/proc/self/maps`.
#[cfg(target_os = "linux")]
mod loaded {
    use std::ffi::{CStr, c_char, c_int, c_void};
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::MetadataExt as _;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    use dlopen2::raw::Library;

    /// glibc's and musl's `RTLD_DI_LINKMAP` (`<dlfcn.h>`).
    const RTLD_DI_LINKMAP: c_int = 2;

    /// The public head of `struct link_map` (`<link.h>`), the same in
    /// glibc and musl.
    #[repr(C)]
    struct LinkMap {
        l_addr: usize,
        l_name: *const c_char,
        l_ld: *const c_void,
        l_next: *const LinkMap,
        l_prev: *const LinkMap,
    }

    unsafe extern "C" {
        /// `dlinfo` (glibc, musl).
        fn dlinfo(handle: *mut c_void, request: c_int, info: *mut c_void) -> c_int;
    }

    /// Opens so far, numbering the names of [`unique_fd_path`].
    static OPENS: AtomicU64 = AtomicU64::new(0);

    /// `/proc/self/fd/N` for `file`, spelled as no earlier call spelled it.
    ///
    /// The OS loader hands out an already loaded object for a name it has
    /// seen, and a descriptor number is reused once closed while a library
    /// opened through it stays mapped (Rust plugins are never unmapped).
    /// So the name carries a number of its own: the bits of a counter,
    /// least significant first, as path steps that change nothing (`./`
    /// for 1, an empty step `/` for 0) between `/proc/self/` and `fd/N`.
    /// Distinct counters give distinct names (the last step of a non-zero
    /// counter is `./`), at most 128 characters longer.
    pub(super) fn unique_fd_path(file: &std::fs::File) -> PathBuf {
        let mut count = OPENS.fetch_add(1, Ordering::Relaxed);
        let mut path = String::from("/proc/self/");
        while count != 0 {
            path.push_str(if count & 1 == 1 { "./" } else { "/" });
            count >>= 1;
        }
        path.push_str(&format!("fd/{}", file.as_raw_fd()));
        PathBuf::from(path)
    }

    /// Checks that `library` is a new object, opened by the name `opened_as`
    /// just now, whose mapped file is `file`: its link map's name is
    /// `opened_as`, and the mapping holding its dynamic section has `file`'s
    /// device and inode. On refusal, what was found instead.
    pub(super) fn verify(library: &Library, file: &std::fs::File, opened_as: &Path) -> Result<(), String> {
        let mut map: *const LinkMap = std::ptr::null();
        // SAFETY: the handle is a live `dlopen` handle owned by `library`;
        // `RTLD_DI_LINKMAP` writes one `struct link_map *` to `map`.
        let status = unsafe { dlinfo(library.into_raw(), RTLD_DI_LINKMAP, (&raw mut map).cast()) };
        if status != 0 || map.is_null() {
            return Err("the loader cannot say which object it opened (dlinfo failed)".to_owned());
        }
        // SAFETY: `map` is the loader's link map of the open library, valid
        // while `library` is open; only its public head is read.
        let (name, dynamic) = unsafe {
            let map = &*map;
            let name = if map.l_name.is_null() { c"" } else { CStr::from_ptr(map.l_name) };
            (name.to_bytes().to_vec(), map.l_ld.addr())
        };
        if name != opened_as.as_os_str().as_bytes() {
            return Err(format!(
                "it handed out an object it had already loaded (`{}`)",
                String::from_utf8_lossy(&name)
            ));
        }
        let metadata =
            file.metadata().map_err(|error| format!("the in-memory file cannot be read: {error}"))?;
        let expected = (libc::major(metadata.dev()), libc::minor(metadata.dev()), metadata.ino());
        match mapping_file(dynamic) {
            Some(found) if found == expected => Ok(()),
            Some((major, minor, inode)) => Err(format!(
                "its code is mapped from device {major:x}:{minor:x} inode {inode}, not from the checked \
                 in-memory file (inode {})",
                expected.2
            )),
            None => Err("the mapping of its code is not in /proc/self/maps".to_owned()),
        }
    }

    /// The device (major, minor) and inode of the file mapped at `address`:
    /// asked of `/proc/self/maps` with one `PROCMAP_QUERY` (Linux 6.11 and
    /// later), else read from its text.
    pub(super) fn mapping_file(address: usize) -> Option<(u32, u32, u64)> {
        let maps = std::fs::File::open("/proc/self/maps").ok()?;
        match procmap_query(&maps, address) {
            Some(found) => found,
            None => mapping_file_in_text(maps, address),
        }
    }

    /// `struct procmap_query` (`<linux/fs.h>`, Linux 6.11).
    #[repr(C)]
    #[derive(Default)]
    struct ProcmapQuery {
        size: u64,
        query_flags: u64,
        query_addr: u64,
        vma_start: u64,
        vma_end: u64,
        vma_flags: u64,
        vma_page_size: u64,
        vma_offset: u64,
        inode: u64,
        dev_major: u32,
        dev_minor: u32,
        vma_name_size: u32,
        build_id_size: u32,
        vma_name_addr: u64,
        build_id_addr: u64,
    }

    /// `PROCMAP_QUERY`: `_IOWR('f', 17, struct procmap_query)`.
    const PROCMAP_QUERY: u64 =
        (3 << 30) | ((size_of::<ProcmapQuery>() as u64) << 16) | ((b'f' as u64) << 8) | 17;

    /// The mapping at `address` through `PROCMAP_QUERY`: `None` when the
    /// kernel has no such request, `Some(None)` when nothing is mapped
    /// there.
    #[expect(clippy::option_option, reason = "unsupported, unmapped and mapped are three answers")]
    pub(super) fn procmap_query(maps: &std::fs::File, address: usize) -> Option<Option<(u32, u32, u64)>> {
        let mut query = ProcmapQuery {
            size: size_of::<ProcmapQuery>() as u64,
            query_addr: address as u64,
            ..ProcmapQuery::default()
        };
        // SAFETY: `PROCMAP_QUERY` reads and writes one `struct
        // procmap_query` whose `size` is set; no name or build ID buffer is
        // given (their sizes are 0). A kernel without the request answers
        // ENOTTY or EINVAL and writes nothing.
        let status = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY as _, &raw mut query) };
        if status == 0 {
            return Some(Some((query.dev_major, query.dev_minor, query.inode)));
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOENT) => Some(None),
            _ => None,
        }
    }

    /// The device and inode of the file mapped at `address`, from the text
    /// of `/proc/self/maps`.
    pub(super) fn mapping_file_in_text(mut maps: std::fs::File, address: usize) -> Option<(u32, u32, u64)> {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut maps, &mut text).ok()?;
        text.lines().find_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
            if !range.contains(&address) {
                return None;
            }
            let (_perms, _offset) = (fields.next()?, fields.next()?);
            let (major, minor) = fields.next()?.split_once(':')?;
            let inode = fields.next()?.parse().ok()?;
            Some((u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?, inode))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_mapping_query_and_the_maps_text_agree() {
        let code = elf_symbol_kind as fn(*const ()) -> SymbolKind as *const ();
        let maps = || std::fs::File::open("/proc/self/maps").unwrap();
        let from_text = loaded::mapping_file_in_text(maps(), code.addr());
        assert!(from_text.is_some_and(|(_, _, inode)| inode != 0), "the test binary is mapped from a file");
        if let Some(queried) = loaded::procmap_query(&maps(), code.addr()) {
            assert_eq!(queried, from_text);
            assert_eq!(loaded::procmap_query(&maps(), 8), Some(None), "nothing is mapped at 8");
        }
        assert_eq!(loaded::mapping_file(code.addr()), from_text);
    }

    static NOT_CODE: [u8; 16] = [0xcc; 16];

    #[test]
    #[cfg(target_os = "linux")]
    fn code_and_data_are_told_apart_by_their_mapping() {
        let code = elf_symbol_kind as fn(*const ()) -> SymbolKind as *const ();
        assert_eq!(executable_mapping(code), Some(true));
        assert_eq!(executable_mapping(NOT_CODE.as_ptr().cast()), Some(false));
        assert_eq!(executable_mapping(std::ptr::without_provenance(8)), Some(false), "in no mapping");
        assert_eq!(symbol_kind(NOT_CODE.as_ptr().cast()), SymbolKind::NotExecutable);
    }

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
