//! xplug's three [`Loader`]s ([`StaticLoader`], [`SystemLibraryLoader`],
//! [`EmbeddedElfLoader`]), the [`MappedCode`] each opens
//! ([`SystemLibraryCode`], [`EmbeddedElfCode`]) and what only that kind of
//! code has: a linked-in registration or query function turned into
//! [`Code`] ([`StaticLoader::registration_code`],
//! [`StaticLoader::query_code`]), a library the raw layer opened turned
//! into [`Code`] and given back ([`SystemLibraryLoader::library_code`],
//! [`SystemLibraryLoader::into_library`]). Every [`Plugin`] is then made by
//! [`Code::load`].

use std::path::Path;

use xplug_abi::{Features, QueryFn};
use xplug_elf::ElfImage;

use crate::loader::{CodeDetail, MappedCode, file_stem};
use crate::raw::{self, OptionalExports, RawLibrary, RawQuery};
use crate::{
    Code, CodeBytes, EMBEDDED_ELF, EmbeddedElfLoader, Error, Loader, Origin, Plugin, StaticLoader,
    StaticPluginRegistration, SystemLibraryLoader,
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

/// The code [`SystemLibraryLoader`] opens: a library the OS loader
/// opened, with its query export (looked up once, when the library was
/// opened). Reached from a plugin with [`Code::downcast_ref`].
pub struct SystemLibraryCode {
    library: RawLibrary,
    query: QueryFn,
}

impl SystemLibraryCode {
    /// The raw layer's view of the library, for what the checked layer
    /// does not read (`load_error`, symbol kinds).
    #[must_use]
    pub fn library(&self) -> &RawLibrary {
        &self.library
    }
}

impl MappedCode for SystemLibraryCode {
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

/// The code [`EmbeddedElfLoader`] opens: a mapped embedded ELF image.
/// Reached from a plugin with [`Code::downcast_ref`].
pub struct EmbeddedElfCode {
    /// The image's entry in the debugging services (`xplug-debug`),
    /// withdrawn before the image is unmapped (fields drop in order).
    _announced: xplug_debug::CodeAnnouncement,
    image: ElfImage,
    /// How many records the FatELF container held (0 for a plain ELF).
    records: usize,
}

impl EmbeddedElfCode {
    /// The mapped image: its [`plan`](ElfImage::plan) says which FatELF
    /// record was chosen and where each segment lies.
    #[must_use]
    pub fn image(&self) -> &ElfImage {
        &self.image
    }
}

impl MappedCode for EmbeddedElfCode {
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
        self.linked_code(target)
    }
}

impl StaticLoader {
    /// The code of the plugin linked into the program under `name` (one
    /// of [`static_plugins`](crate::static_plugins)): what `static:NAME`
    /// opens, and [`Loader::open`] for this loader. Safe: linking the code
    /// was the trust decision.
    ///
    /// ```
    /// use xplug_providers::{Error, STATIC};
    ///
    /// let missing = STATIC.linked_code("no_such_plugin");
    /// assert!(matches!(missing, Err(Error::StaticPluginNotFound { .. })));
    /// ```
    ///
    /// # Errors
    /// [`Error::StaticPluginNotFound`], listing the names linked in.
    pub fn linked_code(&'static self, name: &str) -> Result<Code, Error> {
        find_registration(name).map(|registration| self.registration_code(registration))
    }

    /// The code of a link-time registration (one of
    /// [`static_plugins`](crate::static_plugins)): what `static:NAME`
    /// opens, without the look-up by name. Safe: the registration's maker
    /// vouched for it ([`StaticPluginRegistration::new`] is `unsafe`).
    #[must_use]
    pub fn registration_code(&'static self, registration: &'static StaticPluginRegistration) -> Code {
        // SAFETY: `StaticPluginRegistration::new` (unsafe) made its caller
        // promise the v0 contract for the life of the program.
        let query = unsafe { RawQuery::new(registration.query()) };
        let optional =
            (!registration.optional_exports().is_empty()).then_some(RegisteredExports(registration));
        Code::new(self, None, registration.name(), LinkedQuery(query, optional))
    }

    /// The code of a query function linked into the program, named `name`
    /// until its header gives a name.
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/src/reference/abi.md#query`)
    /// for the rest of the program: return NULL or a pointer to a v0 table
    /// that stays valid and unchanged, with NUL-terminated header strings
    /// and functions that obey the v0 ABI (callable from any thread).
    /// Loading the same query function twice gives two instances sharing
    /// the plugin's code and globals, so its `load` must tolerate that.
    #[must_use]
    pub unsafe fn query_code(&'static self, name: &str, query: QueryFn) -> Code {
        // SAFETY: the caller promises the v0 contract for the whole program.
        let query = unsafe { RawQuery::new(query) };
        Code::new(self, None, name, LinkedQuery(query, None))
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
        self.library_code(unsafe { RawLibrary::open(target) }?)
    }

    /// Opens a library's bytes ([`RawLibrary::open_image`]).
    unsafe fn open_image(&'static self, name: &str, bytes: &[u8]) -> Result<Code, Error> {
        // SAFETY: forwarded to the caller.
        self.library_code(unsafe { RawLibrary::open_image(name, bytes) }?)
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
        self.library_code(unsafe { RawLibrary::open_file_bytes(Path::new(target), code) }?)
    }
}

impl SystemLibraryLoader {
    /// The code of a library the raw layer opened ([`RawLibrary::open`],
    /// [`RawLibrary::open_image`]): its query export, and the unload policy
    /// (`docs/src/reference/loading.md#unload-policy`): a Rust library stays mapped after
    /// its plugin is dropped, pinned before any of its code that could
    /// leave thread-local destructors behind (its `load`) runs. A tool that
    /// has read the library's lists (`exports`, `params`) loads it this way
    /// without opening the file a second time.
    ///
    /// Safe: the trust was placed when the library was opened.
    ///
    /// # Errors
    /// Those of [`RawLibrary::query`] and [`RawLibrary::pin`].
    pub fn library_code(&'static self, library: RawLibrary) -> Result<Code, Error> {
        let fallback_name = library
            .path()
            .file_name()
            .map_or_else(|| library.path().display().to_string(), |name| name.to_string_lossy().into_owned());
        let query = library.query()?.as_fn();
        if library.is_xplug_sdk() {
            library.pin()?;
        }
        let origin = library.origin().clone();
        Ok(Code::new(self, Some(origin), &fallback_name, SystemLibraryCode { library, query }))
    }

    /// Unloads `plugin` and gives back the library it ran from, open: the
    /// reverse of [`SystemLibraryLoader::library_code`]. The host allocator
    /// the plugin was given stays alive until the library is closed, so its
    /// finalisers may still free through it.
    ///
    /// # Errors
    /// The plugin itself, still loaded and unchanged, when its code is no
    /// [`SystemLibraryCode`].
    #[expect(
        clippy::result_large_err,
        reason = "the plugin itself is the error, given back unchanged as `Arc::try_unwrap` gives back the `Arc`"
    )]
    pub fn into_library(&self, plugin: Plugin) -> Result<RawLibrary, Plugin> {
        let (code, allocator) = plugin.into_mapped::<SystemLibraryCode>()?;
        let mut library = code.library;
        library.keep_until_closed(allocator);
        Ok(library)
    }
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
        EmbeddedElfCode { _announced: announced, image, records },
    )
    .with_label(label))
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;

    use xplug_abi::{
        EnvironmentV0, Features, Header, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status,
        StatusCode, Version,
    };

    use super::*;
    use crate::{LoadParamList, STATIC, compatibility};

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
        let error = code(&EMBEDDED_ELF, query).load(&LoadParamList::new()).unwrap_err();
        assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: compatibility::Incompatibility::MissingFeatures { missing, .. } }
                if plugin == "`unit` (memory image `unit` (embedded ELF))" && *missing == Features::STANDALONE),
            "{error:?}"
        );
    }

    #[test]
    fn a_nameless_header_is_refused() {
        let error = code(&STATIC, nameless_query).load(&LoadParamList::new()).unwrap_err();
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: compatibility::Incompatibility::NullName }
                if plugin == "`fallback` (linked in)"),
            "{error:?}"
        );
        assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    }

    #[test]
    fn a_plugin_without_unload_loads_and_drops() {
        let plugin = code(&STATIC, query).load(&LoadParamList::new()).unwrap();
        assert_eq!(plugin.name(), "unit");
        assert_eq!(plugin.info().description, "");
        assert_eq!(plugin.unload(), crate::AllocationStats::default());
    }
}
