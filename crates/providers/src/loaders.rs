//! Every way to build a [`Plugin`], in one place: from a query function
//! linked in ([`Plugin::from_static_query`], [`Plugin::from_registration`]),
//! from a shared library the OS loader opens ([`Plugin::load_system_library`],
//! [`Plugin::load_system_library_image`], [`Plugin::from_raw_library`]), and
//! from an embedded ELF image ([`Plugin::load_embedded_elf`],
//! [`Plugin::load_embedded_elf_image`]).
//!
//! Each ends in [`load_checked`] with a [`RawQuery`] and a [`LoadSite`]
//! saying where the code came from ([`PluginSource`]: the loader's name and
//! required features follow from it) and what keeps it mapped.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use xplug_abi::{QueryFn, Version};
use xplug_elf::{ElfImage, ReadableRanges};

use crate::plugin::{Code, label};
use crate::raw::{self, RawLibrary, RawLoadError, RawQuery};
use crate::{
    CountingAllocator, Error, LoadParamList, Origin, Plugin, PluginInfo, PluginMessage, PluginSource,
    ProviderName, StaticPluginRegistration, checks,
};

/// Plugins linked into the program, shared libraries opened by the OS
/// loader, and embedded ELF images mapped by [`xplug_elf`].
impl Plugin {
    /// Loads the plugin behind a query function linked into the program:
    /// the checks of [`crate::checks`], then its `load` with `params`.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] when `query` returns NULL,
    /// [`Error::Incompatible`] when a check fails, [`Error::LoadFailed`]
    /// when the plugin's `load` fails (its `unload` is then not called).
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/abi.md#query`)
    /// for the rest of the program: return NULL or a pointer to a v0 table
    /// that stays valid and unchanged, with NUL-terminated header strings
    /// and functions that obey the v0 ABI (callable from any thread).
    ///
    /// # Thread-safety
    /// Any thread. Loading the same query function twice gives two
    /// instances sharing the plugin's code and globals, so its `load` must
    /// tolerate that.
    pub unsafe fn from_static_query(query: QueryFn, params: &LoadParamList) -> Result<Self, Error> {
        let site = LoadSite {
            fallback_name: "static plugin".to_owned(),
            source: PluginSource::Static,
            code: Code::Linked,
        };
        // SAFETY: the caller promises the v0 contract for the whole program.
        let query = unsafe { RawQuery::new(query) };
        load_checked(query, site, params)
    }

    /// Loads a plugin registered with [`StaticPluginRegistration`] (see
    /// [`crate::static_plugins`]).
    ///
    /// # Errors
    /// As [`Plugin::from_static_query`]; messages name the registration
    /// when the header has no name.
    pub fn from_registration(
        registration: &'static StaticPluginRegistration,
        params: &LoadParamList,
    ) -> Result<Self, Error> {
        let site = LoadSite {
            fallback_name: registration.name().to_owned(),
            source: PluginSource::Static,
            code: Code::Linked,
        };
        // SAFETY: `StaticPluginRegistration::new` (unsafe) made its caller
        // promise the v0 contract for the life of the program.
        let query = unsafe { RawQuery::new(registration.query()) };
        load_checked(query, site, params)
    }

    /// Opens the shared library at `path` ([`RawLibrary::open`]), finds its
    /// query export and loads the plugin as [`Plugin::from_static_query`]
    /// does; the library stays open until the plugin is dropped.
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
        let library = unsafe { RawLibrary::open_image(name, bytes) }?;
        Self::from_raw_library(library, params)
    }

    /// Loads the plugin in a library the raw layer opened
    /// ([`RawLibrary::open`], [`RawLibrary::open_image`]): finds its query
    /// export and loads the plugin as [`Plugin::from_static_query`] does;
    /// the library stays open until the plugin is dropped (or given back by
    /// [`Plugin::into_raw_library`]). A tool that has read the library's
    /// lists (`exports`, `params`) loads it this way without opening the
    /// file a second time.
    ///
    /// Safe: the trust was placed when the library was opened.
    ///
    /// # Errors
    /// Those of [`RawLibrary::query`] and [`RawLibrary::pin`], then those
    /// of [`Plugin::from_static_query`]; a refused `load` carries the
    /// plugin's own explanation when it gives one.
    pub fn from_raw_library(library: RawLibrary, params: &LoadParamList) -> Result<Self, Error> {
        let fallback_name = library
            .path()
            .file_name()
            .map_or_else(|| library.path().display().to_string(), |name| name.to_string_lossy().into_owned());
        let query = library.query()?.as_fn();
        // The unload policy (`docs/loading.md#unload-policy`): a Rust library
        // stays mapped after its plugin is dropped, before any of its code
        // that could leave thread-local destructors behind (its `load`) runs.
        if library.is_xplug_sdk() {
            library.pin()?;
        }
        let source = PluginSource::SystemLibrary { origin: library.origin().clone() };
        let site = LoadSite { fallback_name, source, code: Code::Library(Box::new(library)) };
        // SAFETY: `query` is the library's v0 export (its opener vouched for
        // the library); the library stays open while the plugin holds
        // `site.code`, which outlives the plugin's instance, so `'static` is
        // never observed beyond the library's life.
        let query = unsafe { RawQuery::new(query) };
        load_checked(query, site, params)
    }

    /// Reads the `.sos` (or plain ELF) at `path`, validates and maps it
    /// ([`ElfImage::load`]) and loads the plugin with the checks of
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
        let bytes = raw::read_elf_file(path)?;
        let fallback_name = path
            .file_stem()
            .map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned());
        // SAFETY: forwarded to the caller.
        unsafe { load_elf(&bytes, Origin::File(path.to_path_buf()), fallback_name, params) }
    }

    /// Loads a plugin from the bytes of a `.sos` file (a FatELF container
    /// or one ELF), as if read from a file called `name`. The bytes are
    /// copied; `bytes` may be dropped afterwards.
    ///
    /// # Errors
    /// [`Error::EmbeddedElf`] when the image is refused or cannot be mapped
    /// (its source says why); then the errors of
    /// [`Plugin::from_static_query`], including a refusal of a plugin
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
        let origin = Origin::Memory(name.to_owned());
        // SAFETY: forwarded to the caller.
        unsafe { load_elf(bytes, origin.clone(), origin.to_string(), params) }
    }
}

/// Validates, maps and hands over to the checked loader.
///
/// # Safety
/// As [`Plugin::load_embedded_elf_image`].
unsafe fn load_elf(
    bytes: &[u8],
    origin: Origin,
    fallback_name: String,
    params: &LoadParamList,
) -> Result<Plugin, Error> {
    let span = tracing::debug_span!("xplug.embedded_elf.map", plugin = %origin, size = bytes.len());
    let image = span
        .in_scope(|| {
            let shown = match &origin {
                Origin::File(path) => path.file_name().map(|name| name.to_string_lossy().into_owned()),
                Origin::Memory(name) => Some(name.clone()),
            };
            ElfImage::load_named(bytes, shown.as_deref().unwrap_or("embedded ELF image"))
        })
        .map_err(|source| Error::EmbeddedElf { plugin: origin.to_string(), source: Box::new(source) })?;
    let source = PluginSource::EmbeddedElf { origin, record: image.plan().record().copied() };
    // SAFETY: the caller vouches for the plugin.
    let query = unsafe { image.query() };
    let image = Box::new(image);
    let ranges: *const ReadableRanges = image.readable_ranges();
    // SAFETY: the ranges live in the boxed image, which does not move and
    // is dropped only with `site.code`, which outlives every use of the
    // query, its table and header (`load_checked`'s contract for `'static`).
    let ranges: &'static ReadableRanges = unsafe { &*ranges };
    let site = LoadSite { fallback_name, source, code: Code::Elf(image) };
    // SAFETY: `query` is the image's v0 query function (the caller's
    // promise); the image stays mapped while the plugin holds `site.code`,
    // which outlives the plugin's instance; the header and its strings are
    // checked against `ranges` before they are read.
    let query = unsafe { RawQuery::in_image(query, ranges) };
    load_checked(query, site, params)
}

/// How a loader describes the plugin it is loading.
pub(crate) struct LoadSite {
    /// The name to use before the header is read, or when it has none.
    pub(crate) fallback_name: String,
    /// Where the code came from: the loader and its required features.
    pub(crate) source: PluginSource,
    /// Kept alive inside the plugin until after `unload`. A library is
    /// also asked for the parameters it declares, the explanation of a
    /// refused `load`, and its exports list.
    pub(crate) code: Code,
}

/// Queries, checks and loads: the steps every loader shares.
///
/// `query` must stay valid while `site.code` is held (the `'static` is the
/// caller's promise that the plugin keeps the code alive).
pub(crate) fn load_checked(
    query: RawQuery<'static>,
    site: LoadSite,
    params: &LoadParamList,
) -> Result<Plugin, Error> {
    let span = tracing::info_span!(
        "xplug.plugin.load",
        plugin = %site.fallback_name,
        source = %site.source,
        name = tracing::field::Empty
    );
    let _entered = span.enter();

    let Some(table) = query.query(Version::LATEST) else {
        return Err(Error::UnsupportedVersion {
            plugin: label(&site.fallback_name, &site.source),
            supported: Version::LATEST,
        });
    };
    let header = table
        .header()
        .map_err(|reason| Error::Incompatible { plugin: label(&site.fallback_name, &site.source), reason })?;
    let shown_name =
        header.as_ref().and_then(|header| header.name.clone()).unwrap_or_else(|| site.fallback_name.clone());
    span.record("name", shown_name.as_str());
    // How errors name the plugin; formatted only when one is built.
    let plugin = || label(&shown_name, &site.source);
    let header = checks::check_plugin(
        header.as_ref(),
        table.entry_points(),
        site.source.loader(),
        site.source.required_features(),
    )
    .map_err(|reason| Error::Incompatible { plugin: plugin(), reason })?;
    // xplug's optional exports, read alike from a library and a `.sos`.
    let library = site.code.optional_exports();
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
    // the plugin does not also print it (docs/abi.md#load-error-message).
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
        source: site.source,
        exports: OnceLock::new(),
        param_decls,
        import_layouts: OnceLock::new(),
        code: site.code,
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

    fn site(source: PluginSource) -> LoadSite {
        LoadSite { fallback_name: "fallback".to_owned(), source, code: Code::Linked }
    }

    /// What an embedded ELF loaded from memory says it is.
    fn embedded() -> PluginSource {
        PluginSource::EmbeddedElf { origin: Origin::Memory("unit".to_owned()), record: None }
    }

    #[test]
    fn loader_required_features_are_enforced() {
        // SAFETY: `query` returns the immutable, valid table above.
        let query = unsafe { RawQuery::new(query) };
        let error = load_checked(query, site(embedded()), &LoadParamList::new()).unwrap_err();
        assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: checks::Incompatibility::MissingFeatures { missing, .. } }
                if plugin == "`unit` (memory image `unit` (embedded ELF))" && *missing == Features::STANDALONE),
            "{error:?}"
        );
    }

    #[test]
    fn a_nameless_header_is_refused() {
        // SAFETY: `nameless_query` returns the immutable, valid table above.
        let query = unsafe { RawQuery::new(nameless_query) };
        let error = load_checked(query, site(PluginSource::Static), &LoadParamList::new()).unwrap_err();
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: checks::Incompatibility::NullName }
                if plugin == "`fallback` (linked in)"),
            "{error:?}"
        );
        assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    }

    #[test]
    fn a_plugin_without_unload_loads_and_drops() {
        // SAFETY: as above.
        let query = unsafe { RawQuery::new(query) };
        let plugin = load_checked(query, site(PluginSource::Static), &LoadParamList::new()).unwrap();
        assert_eq!(plugin.name(), "unit");
        assert_eq!(plugin.info().description, "");
        assert_eq!(plugin.unload(), crate::AllocationStats::default());
    }
}
