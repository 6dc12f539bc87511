//! xplug's three [`Loader`]s ([`StaticLoader`], [`SystemLibraryLoader`],
//! [`EmbeddedElfLoader`]) and every way to build a [`Plugin`] from them:
//! from a query function linked in ([`Plugin::from_static_query`],
//! [`Plugin::from_registration`]), from a shared library the OS loader
//! opens ([`Plugin::load_system_library`],
//! [`Plugin::load_system_library_image`], [`Plugin::from_raw_library`]),
//! from an embedded ELF image ([`Plugin::load_embedded_elf`],
//! [`Plugin::load_embedded_elf_image`]), and from any loader's [`Code`]
//! ([`Plugin::from_code`]).
//!
//! Each ends in [`Plugin::from_code`]: the code's query function, the
//! checks of [`crate::checks`] with the loader's name and required
//! features, then the plugin's `load`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use xplug_abi::{Features, QueryFn, Version};
use xplug_elf::ElfImage;

use crate::loader::{CodeDetail, MappedCode, file_stem};
use crate::raw::{self, OptionalExports, RawLibrary, RawLoadError, RawQuery};
use crate::{
    Code, CodeBytes, CountingAllocator, EMBEDDED_ELF, EmbeddedElfLoader, Error, LoadParamList, Loader,
    Origin, Plugin, PluginInfo, PluginMessage, ProviderName, STATIC, SYSTEM_LIBRARY, StaticLoader,
    StaticPluginRegistration, SystemLibraryLoader, checks,
};

/// The prefix that selects the embedded ELF loader.
pub const EMBEDDED_PREFIX: &str = "embedded:";
/// The file suffix that selects the embedded ELF loader (IREE's rule).
pub const EMBEDDED_SUFFIX: &str = ".sos";
/// The prefix naming a plugin linked into the binary (`static:NAME`).
pub const STATIC_PREFIX: &str = "static:";

/// A query function linked into the program, with the optional exports
/// of its registration when it came from one.
struct LinkedQuery(RawQuery<'static>, Option<RegisteredExports>);

impl MappedCode for LinkedQuery {
    fn query(&self) -> RawQuery<'_> {
        self.0
    }

    fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        self.1.as_ref().map(|exports| exports as &dyn OptionalExports)
    }
}

/// The optional exports a link-time registration carries
/// ([`StaticPluginRegistration::with_optional_exports`]), read by the same
/// readers as a library's.
struct RegisteredExports(&'static StaticPluginRegistration);

// SAFETY: each function is one the registration's maker vouched for with
// the contract of the export it stands for, valid for the whole program
// (`StaticPluginRegistration::with_optional_exports`, an `unsafe` fn).
unsafe impl OptionalExports for RegisteredExports {
    fn optional_export(&self, name: &std::ffi::CStr) -> Option<*const ()> {
        self.0.optional_exports().get(name)
    }
}

/// What a plugin holds once its code was given back
/// ([`Plugin::into_raw_library`]): a query that answers NULL, never
/// called (the plugin is unloaded).
pub(crate) fn released_code(source: crate::PluginSource) -> Code {
    unsafe extern "C" fn no_table(_: Version, _: *mut std::ffi::c_void) -> *mut *const xplug_abi::Header {
        std::ptr::null_mut()
    }
    // SAFETY: `no_table` answers NULL, which the v0 contract allows.
    let query = unsafe { RawQuery::new(no_table) };
    Code::from_source(source, "released", LinkedQuery(query, None))
}

/// A library the OS loader opened, with its query export (looked up once,
/// when the library was opened).
pub(crate) struct LibraryCode {
    pub(crate) library: RawLibrary,
    query: QueryFn,
}

impl MappedCode for LibraryCode {
    fn query(&self) -> RawQuery<'_> {
        // SAFETY: the library's v0 export, vouched for by its opener
        // (`RawLibrary::open`'s contract); the library stays open while
        // `self` is borrowed.
        unsafe { RawQuery::new(self.query) }
    }

    fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        Some(&self.library)
    }

    fn details(&self) -> Vec<CodeDetail> {
        if self.library.is_sealed() {
            vec![CodeDetail::one("memory file", "sealed against write, grow, shrink and unseal".to_owned())]
        } else {
            Vec::new()
        }
    }
}

/// A mapped embedded ELF image.
pub(crate) struct ElfCode {
    /// The image's entry in the debugging services (`xplug-debug`),
    /// withdrawn before the image is unmapped (fields drop in order).
    _announced: xplug_debug::CodeAnnouncement,
    pub(crate) image: ElfImage,
    /// How many records the FatELF container held (0 for a plain ELF).
    records: usize,
}

impl MappedCode for ElfCode {
    fn query(&self) -> RawQuery<'_> {
        // SAFETY: the image was opened through `EmbeddedElfLoader`, whose
        // caller vouched for its code; the header pointers are checked
        // against the image's segments before they are read.
        unsafe { RawQuery::from_elf_image(&self.image) }
    }

    fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        Some(&self.image)
    }

    fn details(&self) -> Vec<CodeDetail> {
        let plan = self.image.plan();
        let record = plan.record().map_or_else(
            || "plain ELF (no FatELF container)".to_owned(),
            |record| format!("{} of {}: {record}", record.index, self.records),
        );
        let segments = plan
            .segments()
            .iter()
            .map(|segment| {
                format!(
                    "{:#08x}..{:#08x} {}",
                    segment.image_offset,
                    segment.image_offset + segment.mem_size,
                    segment.flags
                )
            })
            .collect();
        vec![CodeDetail::one("record", record), CodeDetail::list("segments", segments)]
    }
}

impl Loader for StaticLoader {
    fn name(&self) -> &'static str {
        "static"
    }

    fn claim<'s>(&self, spec: &'s str) -> Option<&'s str> {
        spec.strip_prefix(STATIC_PREFIX)
    }

    /// Finds the registration called `target` among
    /// [`crate::static_plugins`].
    ///
    /// # Errors
    /// [`Error::StaticPluginNotFound`], listing the names linked in.
    unsafe fn open(&'static self, target: &str) -> Result<Code, Error> {
        find_registration(target).map(registration_code)
    }
}

/// The registration called `name` among [`crate::static_plugins`].
fn find_registration(name: &str) -> Result<&'static StaticPluginRegistration, Error> {
    let registrations = crate::static_plugins();
    registrations.iter().copied().find(|r| r.name() == name).ok_or_else(|| Error::StaticPluginNotFound {
        name: name.to_owned(),
        linked: registrations.iter().map(|r| r.name().to_owned()).collect(),
    })
}

/// The code of a link-time registration.
fn registration_code(registration: &'static StaticPluginRegistration) -> Code {
    // SAFETY: `StaticPluginRegistration::new` (unsafe) made its caller
    // promise the v0 contract for the life of the program.
    let query = unsafe { RawQuery::new(registration.query()) };
    let optional = (!registration.optional_exports().is_empty()).then_some(RegisteredExports(registration));
    Code::new(&STATIC, None, registration.name(), LinkedQuery(query, optional))
}

impl Loader for SystemLibraryLoader {
    fn name(&self) -> &'static str {
        "system library"
    }

    /// Every spec: this loader is the last of the list.
    fn claim<'s>(&self, spec: &'s str) -> Option<&'s str> {
        Some(spec)
    }

    /// Opens the library at `target` ([`RawLibrary::open`]) and finds its
    /// query export.
    unsafe fn open(&'static self, target: &str) -> Result<Code, Error> {
        // SAFETY: forwarded to the caller.
        library_code(unsafe { RawLibrary::open(target) }?)
    }

    /// Opens a library's bytes ([`RawLibrary::open_image`]).
    unsafe fn open_image(&'static self, name: &str, bytes: &[u8]) -> Result<Code, Error> {
        // SAFETY: forwarded to the caller.
        library_code(unsafe { RawLibrary::open_image(name, bytes) }?)
    }

    /// Reads the library file at `target` ([`CodeBytes::read_file`]: a
    /// regular file; symbolic links are followed). A bare name
    /// (`libfoo.so`, which the OS loader searches for) is refused:
    /// [`Error::PinUnsupported`].
    fn read(&self, target: &str) -> Result<CodeBytes, Error> {
        let path = Path::new(target);
        if raw::is_bare_name(path) {
            return Err(Error::PinUnsupported {
                loader: self.name(),
                target: target.to_owned(),
                reason: "a bare name is searched for by the OS loader, whose choice xplug cannot pin; give \
                         the file's path (`./NAME` for a file here)",
            });
        }
        CodeBytes::read_file(path, "plugin library")
    }

    /// Opens the bytes read from `target` from their sealed in-memory file
    /// (`docs/src/reference/loading.md#pinned-plugins`), under a name no earlier open used,
    /// and refuses any object the OS loader hands out but that file
    /// ([`Error::CodeSubstituted`]); the library's origin is the file.
    unsafe fn open_bytes(&'static self, target: &str, code: &CodeBytes) -> Result<Code, Error> {
        // SAFETY: forwarded to the caller.
        library_code(unsafe { RawLibrary::open_file_bytes(Path::new(target), code) }?)
    }
}

/// The code of an open library: its query export, and the unload policy
/// (`docs/src/reference/loading.md#unload-policy`): a Rust library stays mapped after
/// its plugin is dropped, pinned before any of its code that could leave
/// thread-local destructors behind (its `load`) runs.
fn library_code(library: RawLibrary) -> Result<Code, Error> {
    let fallback_name = library
        .path()
        .file_name()
        .map_or_else(|| library.path().display().to_string(), |name| name.to_string_lossy().into_owned());
    let query = library.query()?.as_fn();
    if library.is_xplug_sdk() {
        library.pin()?;
    }
    let origin = library.origin().clone();
    Ok(Code::new(&SYSTEM_LIBRARY, Some(origin), &fallback_name, LibraryCode { library, query }))
}

impl Loader for EmbeddedElfLoader {
    fn name(&self) -> &'static str {
        "embedded ELF"
    }

    /// `STANDALONE`: no OS loader resolves an embedded ELF's imports.
    fn required_features(&self) -> Features {
        Features::STANDALONE
    }

    /// `embedded:PATH`, or a path ending in `.sos` (IREE's rule,
    /// `docs/src/reference/specs.md#loader-selection`).
    fn claim<'s>(&self, spec: &'s str) -> Option<&'s str> {
        match spec.strip_prefix(EMBEDDED_PREFIX) {
            Some(path) => Some(path),
            None => spec.ends_with(EMBEDDED_SUFFIX).then_some(spec),
        }
    }

    /// Reads the `.sos` (or plain ELF) at `target`, validates and maps it
    /// ([`ElfImage::load`]) and announces it to the debugging services
    /// (`xplug_debug::code_mapped`); the one routine that opens a `.sos`.
    ///
    /// # Errors
    /// [`Error::FileNotFound`] or [`Error::Io`] when the file cannot be
    /// read; [`Error::FileTooLarge`] over [`CodeBytes::LIMIT`];
    /// [`Error::EmbeddedElf`] (its source says why) when the image is
    /// refused or cannot be mapped.
    unsafe fn open(&'static self, target: &str) -> Result<Code, Error> {
        let path = Path::new(target);
        let bytes = CodeBytes::read_unchecked(path, "embedded ELF plugin")?;
        let shown = path.file_name().map(|name| name.to_string_lossy().into_owned());
        elf_code(&bytes, Origin::File(path.to_path_buf()), &file_stem(path), shown.as_deref())
    }

    /// Validates and maps the bytes of a `.sos`; they are copied.
    unsafe fn open_image(&'static self, name: &str, bytes: &[u8]) -> Result<Code, Error> {
        let origin = Origin::Memory(name.to_owned());
        elf_code(bytes, origin.clone(), &origin.to_string(), Some(name))
    }

    /// Reads the `.sos` at `target` for a pinned open
    /// ([`CodeBytes::read_file`]: into a sealed in-memory file, hashed as
    /// it is read; [`Loader::open`] reads it into memory, unhashed).
    fn read(&self, target: &str) -> Result<CodeBytes, Error> {
        CodeBytes::read_file(Path::new(target), "embedded ELF plugin")
    }

    /// Validates and maps the bytes read from `target` (the same routine
    /// as [`Loader::open`], which reads them itself), through a read-only
    /// mapping of their sealed in-memory file.
    unsafe fn open_bytes(&'static self, target: &str, code: &CodeBytes) -> Result<Code, Error> {
        let path = Path::new(target);
        let shown = path.file_name().map(|name| name.to_string_lossy().into_owned());
        let bytes = code.map(target)?;
        elf_code(&bytes, Origin::File(path.to_path_buf()), &file_stem(path), shown.as_deref())
    }
}

/// Validates and maps an embedded ELF image read from `origin`.
fn elf_code(bytes: &[u8], origin: Origin, fallback_name: &str, shown: Option<&str>) -> Result<Code, Error> {
    let span = tracing::debug_span!("xplug.embedded_elf.map", plugin = %origin, size = bytes.len());
    let image = span
        .in_scope(|| ElfImage::load(bytes))
        .map_err(|source| Error::EmbeddedElf { plugin: origin.to_string(), source: Box::new(source) })?;
    // The "code mapped" hook of the debugging services (crash reports,
    // gdb, perf): `xplug-elf` maps, the host announces.
    let shown = shown.unwrap_or("embedded ELF image");
    let announced = xplug_debug::code_mapped(xplug_debug::MappedRegion::elf_image(shown, &image, bytes));
    let records = xplug_elf::fatelf::records(bytes).map_or(0, |all| all.len());
    let label = match image.plan().record() {
        Some(record) => format!("{origin} (embedded ELF, FatELF record {}: {record})", record.index),
        None => format!("{origin} (embedded ELF)"),
    };
    Ok(Code::new(
        &EMBEDDED_ELF,
        Some(origin),
        fallback_name,
        ElfCode { _announced: announced, image, records },
    )
    .with_label(label))
}

/// Plugins linked into the program, shared libraries opened by the OS
/// loader, and embedded ELF images mapped by [`xplug_elf`].
impl Plugin {
    /// Loads the plugin in code a [`Loader`] opened: the checks of
    /// [`crate::checks`] (with the loader's name and required features),
    /// then its `load` with `params`. The code stays mapped until the
    /// plugin is dropped.
    ///
    /// Safe: the trust was placed when the code was opened.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] when the query answers NULL,
    /// [`Error::Incompatible`] when a check fails, [`Error::LoadFailed`]
    /// when the plugin's `load` fails (its `unload` is then not called); a
    /// refused `load` carries the plugin's own explanation when it gives
    /// one.
    pub fn from_code(code: Code, params: &LoadParamList) -> Result<Self, Error> {
        load_checked(code, params)
    }

    /// Loads the plugin behind a query function linked into the program:
    /// the checks of [`crate::checks`], then its `load` with `params`.
    ///
    /// # Errors
    /// As [`Plugin::from_code`].
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/src/reference/abi.md#query`)
    /// for the rest of the program: return NULL or a pointer to a v0 table
    /// that stays valid and unchanged, with NUL-terminated header strings
    /// and functions that obey the v0 ABI (callable from any thread).
    ///
    /// # Thread-safety
    /// Any thread. Loading the same query function twice gives two
    /// instances sharing the plugin's code and globals, so its `load` must
    /// tolerate that.
    pub unsafe fn from_static_query(query: QueryFn, params: &LoadParamList) -> Result<Self, Error> {
        // SAFETY: the caller promises the v0 contract for the whole program.
        let query = unsafe { RawQuery::new(query) };
        Self::from_code(Code::new(&STATIC, None, "static plugin", LinkedQuery(query, None)), params)
    }

    /// Loads a plugin registered with [`StaticPluginRegistration`] (see
    /// [`crate::static_plugins`]).
    ///
    /// # Errors
    /// As [`Plugin::from_code`]; messages name the registration when the
    /// header has no name.
    pub fn from_registration(
        registration: &'static StaticPluginRegistration,
        params: &LoadParamList,
    ) -> Result<Self, Error> {
        Self::from_code(registration_code(registration), params)
    }

    /// Loads the plugin linked into the program under `name` (see
    /// [`crate::static_plugins`]) with `params`: what the spec
    /// `static:NAME?key=value` loads, without `unsafe`, since linking the
    /// code was the trust decision.
    ///
    /// ```
    /// use xplug_providers::{Error, LoadParamList, Plugin};
    ///
    /// let missing = Plugin::load_static("no_such_plugin", &LoadParamList::new().with("k", "2.5"));
    /// assert!(matches!(missing, Err(Error::StaticPluginNotFound { .. })));
    /// ```
    ///
    /// # Errors
    /// [`Error::StaticPluginNotFound`] (listing the names linked in) when
    /// no plugin of that name is linked in; otherwise as
    /// [`Plugin::from_code`].
    pub fn load_static(name: &str, params: &LoadParamList) -> Result<Self, Error> {
        Self::from_registration(find_registration(name)?, params)
    }

    /// Opens the shared library at `path` ([`RawLibrary::open`]), finds its
    /// query export and loads the plugin as [`Plugin::from_code`] does;
    /// the library stays open until the plugin is dropped.
    ///
    /// # Errors
    /// Those of [`RawLibrary::open`], then those of
    /// [`Plugin::from_raw_library`].
    ///
    /// # Safety
    /// As [`RawLibrary::open`]: the file must be a v0 plugin whose
    /// initialisers and functions are sound to run in this process.
    ///
    /// # Thread-safety
    /// Any thread. The OS loader maps a file once per process: loading the
    /// same path twice gives two instances sharing one copy of the
    /// library's globals.
    ///
    /// # Platform-specific behaviour
    /// As [`RawLibrary::open`].
    ///
    /// ```no_run
    /// use xplug_providers::{LoadParamList, Plugin};
    ///
    /// let params = LoadParamList::new().with("multiplier", "2");
    /// // SAFETY: the library is a trusted v0 plugin.
    /// let plugin = unsafe { Plugin::load_system_library("target/plugins/release/libsample_system.so", &params) }?;
    /// println!("loaded {} ({})", plugin.name(), plugin.info().description);
    /// # Ok::<(), xplug_providers::Error>(())
    /// ```
    pub unsafe fn load_system_library(path: impl AsRef<Path>, params: &LoadParamList) -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        let library = unsafe { RawLibrary::open(path) }?;
        Self::from_raw_library(library, params)
    }

    /// Loads a plugin from the bytes of a shared library
    /// ([`RawLibrary::open_image`]), as if read from a file called `name`.
    ///
    /// # Errors
    /// As [`Plugin::load_system_library`], naming `memory image `name``.
    ///
    /// # Safety
    /// As [`Plugin::load_system_library`]: the bytes must be a trusted v0
    /// plugin.
    ///
    /// # Thread-safety
    /// Any thread. Every call maps a fresh copy of the image: two images
    /// never share globals, even with identical bytes.
    ///
    /// # Platform-specific behaviour
    /// As [`RawLibrary::open_image`].
    pub unsafe fn load_system_library_image(
        name: &str,
        bytes: &[u8],
        params: &LoadParamList,
    ) -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        Self::from_code(unsafe { SYSTEM_LIBRARY.open_image(name, bytes) }?, params)
    }

    /// Loads the plugin in a library the raw layer opened
    /// ([`RawLibrary::open`], [`RawLibrary::open_image`]): finds its query
    /// export and loads the plugin as [`Plugin::from_code`] does;
    /// the library stays open until the plugin is dropped (or given back by
    /// [`Plugin::into_raw_library`]). A tool that has read the library's
    /// lists (`exports`, `params`) loads it this way without opening the
    /// file a second time.
    ///
    /// Safe: the trust was placed when the library was opened.
    ///
    /// # Errors
    /// Those of [`RawLibrary::query`] and [`RawLibrary::pin`], then those
    /// of [`Plugin::from_code`].
    pub fn from_raw_library(library: RawLibrary, params: &LoadParamList) -> Result<Self, Error> {
        Self::from_code(library_code(library)?, params)
    }

    /// Reads the `.sos` (or plain ELF) at `path`, validates and maps it
    /// ([`EmbeddedElfLoader`]) and loads the plugin with the checks of
    /// [`crate::checks`], requiring the `STANDALONE` feature.
    ///
    /// ```no_run
    /// use xplug_providers::{LoadParamList, Plugin};
    ///
    /// // SAFETY: the file is a trusted v0 plugin.
    /// let plugin = unsafe {
    ///     Plugin::load_embedded_elf("target/plugins/release/sample_standalone.sos", &LoadParamList::new())
    /// }?;
    /// println!("loaded {} ({})", plugin.name(), plugin.source());
    /// # Ok::<(), xplug_providers::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::FileNotFound`] or [`Error::Io`] when the file cannot be
    /// read; otherwise as [`Plugin::load_embedded_elf_image`].
    ///
    /// # Safety
    /// As [`Plugin::load_embedded_elf_image`].
    ///
    /// # Platform-specific behaviour
    /// Unix hosts only (`mmap`/`mprotect`); elsewhere
    /// [`EmbeddedElfError::UnsupportedHost`](xplug_elf::EmbeddedElfError::UnsupportedHost).
    pub unsafe fn load_embedded_elf(path: impl AsRef<Path>, params: &LoadParamList) -> Result<Self, Error> {
        let path = path.as_ref();
        // SAFETY: forwarded to the caller.
        let code = unsafe { EMBEDDED_ELF.open(&path.to_string_lossy()) }?;
        Self::from_code(code, params)
    }

    /// Loads a plugin from the bytes of a `.sos` file (a FatELF container
    /// or one ELF), as if read from a file called `name`. The bytes are
    /// copied; `bytes` may be dropped afterwards.
    ///
    /// # Errors
    /// [`Error::EmbeddedElf`] when the image is refused or cannot be mapped
    /// (its source says why); then the errors of
    /// [`Plugin::from_code`], including a refusal of a plugin
    /// without the `STANDALONE` feature.
    ///
    /// # Safety
    /// The image's code runs in this process: validation refuses malformed
    /// and non-standalone files but cannot judge what the code does. It must
    /// be a trusted v0 plugin.
    ///
    /// # Thread-safety
    /// Any thread; every call maps its own copy of the image.
    pub unsafe fn load_embedded_elf_image(
        name: &str,
        bytes: &[u8],
        params: &LoadParamList,
    ) -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        Self::from_code(unsafe { EMBEDDED_ELF.open_image(name, bytes) }?, params)
    }
}

/// Queries, checks and loads: the steps every loader shares.
fn load_checked(code: Code, params: &LoadParamList) -> Result<Plugin, Error> {
    let source = code.source().clone();
    let span = tracing::info_span!(
        "xplug.plugin.load",
        plugin = %code.fallback_name(),
        source = %source,
        name = tracing::field::Empty
    );
    let _entered = span.enter();

    // SAFETY: the query borrows the code's `MappedCode`, boxed (it does
    // not move) and held by the plugin until after its instance is
    // unloaded: `'static` is never observed beyond the code's life.
    let query = unsafe { code.query().detach() };
    let Some(table) = query.query(Version::LATEST) else {
        return Err(Error::UnsupportedVersion {
            plugin: source.plugin_label(code.fallback_name()),
            supported: Version::LATEST,
        });
    };
    let header = table.header().map_err(|reason| Error::Incompatible {
        plugin: source.plugin_label(code.fallback_name()),
        reason,
    })?;
    let shown_name = header
        .as_ref()
        .and_then(|header| header.name.clone())
        .unwrap_or_else(|| code.fallback_name().to_owned());
    span.record("name", shown_name.as_str());
    // How errors name the plugin; formatted only when one is built.
    let plugin = || source.plugin_label(&shown_name);
    let header = checks::check_plugin(
        header.as_ref(),
        table.entry_points(),
        code.loader().name(),
        code.required_features(),
    )
    .map_err(|reason| Error::Incompatible { plugin: plugin(), reason })?;
    // xplug's optional exports, read alike from a library and a `.sos`.
    let library = code.optional_exports();
    // A plugin that lists its parameters is given no other key (with no
    // key given there is nothing to check, and the list is read on first
    // use).
    let param_decls = OnceLock::new();
    if !params.is_empty() {
        let declared = param_decls.get_or_init(|| library.and_then(|library| library.param_decls()));
        if let Some(declared) = declared {
            checks::check_params(declared, params)
                .map_err(|reason| Error::Incompatible { plugin: plugin(), reason })?;
        }
    }

    // Asking for the load message before `load` tells an `xplug-sdk`
    // plugin that this host shows it (as a cause of the error below), so
    // the plugin does not also print it (docs/src/reference/abi.md#load-error-message).
    if let Some(library) = library {
        let _ = library.load_error();
    }
    let allocator = CountingAllocator::new();
    let instance = table.load(&allocator, params).map_err(|error| match error {
        RawLoadError::Refused { code } => {
            let held = allocator.stats();
            if held.live_allocations != 0 {
                let plugin = plugin();
                tracing::warn!(
                    plugin = %plugin,
                    leaked_allocations = held.live_allocations,
                    leaked_bytes = held.live_bytes,
                    "plugin {plugin} failed to load and kept {} allocation(s) of host memory",
                    held.live_allocations
                );
            }
            // Never `unload` after a failed `load` (there is no instance).
            // The plugin's own explanation, when it keeps one.
            let reported = library.and_then(|library| library.load_error()).map(PluginMessage::new);
            Error::LoadFailed { plugin: plugin(), code, param_count: params.len(), reported }
        }
        RawLoadError::MissingFunction { function } => Error::Incompatible {
            plugin: plugin(),
            reason: checks::Incompatibility::MissingFunction { function },
        },
    })?;

    Ok(Plugin {
        instance,
        name: ProviderName::from(Arc::<str>::from(shown_name.as_str())),
        info: PluginInfo {
            description: header.description.clone().unwrap_or_default(),
            version: header.version,
            features: header.features,
            sanitizer: header.sanitizer,
            name: shown_name,
        },
        exports: OnceLock::new(),
        param_decls,
        import_layouts: OnceLock::new(),
        code,
        allocator,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;

    use xplug_abi::{
        EnvironmentV0, Features, Header, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status, StatusCode,
    };

    use super::*;

    struct Table(
        #[expect(dead_code, reason = "read by the host through the pointer the query returns")] PluginV0,
    );
    // SAFETY: immutable table of thread-safe functions.
    unsafe impl Sync for Table {}

    static HEADER: Header = Header {
        version: Version::LATEST,
        name: c"unit".as_ptr(),
        description: std::ptr::null(),
        features: Features::NONE,
        sanitizer: Sanitizer::NONE,
        reserved: [0; 8],
    };

    static NAMELESS: Header = Header { name: std::ptr::null(), ..HEADER };

    unsafe extern "C" fn load(
        _: *const EnvironmentV0,
        _: usize,
        _: *const xplug_abi::StringPair,
        _: *mut *mut c_void,
    ) -> Status {
        Status::OK
    }

    unsafe extern "C" fn resolve(_: *mut c_void, _: *const ResolveParamsV0, _: *mut Resolution) -> Status {
        Status::OK
    }

    static TABLE: Table =
        Table(PluginV0 { header: &HEADER, load: Some(load), unload: None, resolve: Some(resolve) });
    static NAMELESS_TABLE: Table =
        Table(PluginV0 { header: &NAMELESS, load: Some(load), unload: None, resolve: Some(resolve) });

    unsafe extern "C" fn query(_: Version, _: *mut c_void) -> *mut *const Header {
        (&raw const TABLE).cast_mut().cast()
    }

    unsafe extern "C" fn nameless_query(_: Version, _: *mut c_void) -> *mut *const Header {
        (&raw const NAMELESS_TABLE).cast_mut().cast()
    }

    /// Code of `query` as `loader` would give it.
    fn code(loader: &'static dyn Loader, query: QueryFn) -> Code {
        // SAFETY: the queries of this module return immutable, valid tables.
        let query = unsafe { RawQuery::new(query) };
        let origin = Some(Origin::Memory("unit".to_owned())).filter(|_| loader.name() != "static");
        let code = Code::new(loader, origin, "fallback", LinkedQuery(query, None));
        if loader.name() == "static" {
            code
        } else {
            code.with_label("memory image `unit` (embedded ELF)".into())
        }
    }

    #[test]
    fn loader_required_features_are_enforced() {
        let error = load_checked(code(&EMBEDDED_ELF, query), &LoadParamList::new()).unwrap_err();
        assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: checks::Incompatibility::MissingFeatures { missing, .. } }
                if plugin == "`unit` (memory image `unit` (embedded ELF))" && *missing == Features::STANDALONE),
            "{error:?}"
        );
    }

    #[test]
    fn a_nameless_header_is_refused() {
        let error = load_checked(code(&STATIC, nameless_query), &LoadParamList::new()).unwrap_err();
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: checks::Incompatibility::NullName }
                if plugin == "`fallback` (linked in)"),
            "{error:?}"
        );
        assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    }

    #[test]
    fn a_plugin_without_unload_loads_and_drops() {
        let plugin = load_checked(code(&STATIC, query), &LoadParamList::new()).unwrap();
        assert_eq!(plugin.name(), "unit");
        assert_eq!(plugin.info().description, "");
        assert_eq!(plugin.unload(), crate::AllocationStats::default());
    }
}
