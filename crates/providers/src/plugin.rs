//! The checked v0 plugin: load checks, resolve judged from the slots,
//! unload once, then the code is released.
//!
//! Every loader (static, system library, embedded ELF) ends in
//! [`load_checked`] with a [`RawQuery`]; this module adds to the raw steps
//! of [`crate::raw`] the checks of [`crate::checks`], the plugin's name and
//! source, tracing and the unload order.

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xplug_abi::{Features, QueryFn, Resolution, Sanitizer, StatusCode, Version};

use crate::raw::{RawInstance, RawLibrary, RawLoadError, RawQuery};
use crate::{
    AllocationStats, CountingAllocator, Error, ImportProvider, LoadParamList, ProviderName, ResolveRequest,
    StaticPluginRegistration, checks,
};

/// What a plugin's header says about it, copied at load time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The header's `name`.
    pub name: String,
    /// The header's `description` (empty when the plugin gave none).
    pub description: String,
    /// The ABI version the plugin was built against.
    pub version: Version,
    /// The features it declares.
    pub features: Features,
    /// The sanitizer it was compiled with.
    pub sanitizer: Sanitizer,
}

/// Where a plugin was loaded from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginSource {
    /// Linked into the binary (a query function called directly).
    Static,
    /// A shared library opened by the OS loader from a file.
    SystemLibrary {
        /// The file.
        path: PathBuf,
    },
    /// A shared library image loaded from bytes in memory.
    Memory {
        /// The name the caller gave the image.
        name: String,
    },
    /// An embedded ELF (`.sos`) image mapped by xplug's own loader.
    EmbeddedElf {
        /// The file, when loaded from one.
        path: Option<PathBuf>,
        /// The name the caller gave the image, when loaded from memory
        /// (empty for files).
        name: String,
        /// The FatELF record chosen, or `None` for a plain ELF.
        record: Option<crate::embedded_elf::FatElfRecord>,
    },
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Static => f.write_str("linked in"),
            Self::SystemLibrary { path } => write!(f, "{}", path.display()),
            Self::Memory { name } => write!(f, "memory image `{name}`"),
            Self::EmbeddedElf { path, name, record } => {
                match path {
                    Some(path) => write!(f, "{}", path.display())?,
                    None => write!(f, "memory image `{name}`")?,
                }
                match record {
                    Some(record) => write!(f, " (embedded ELF, FatELF record {}: {record})", record.index),
                    None => f.write_str(" (embedded ELF)"),
                }
            }
        }
    }
}

/// An owned, loaded v0 plugin: an [`ImportProvider`] over the plugin's
/// `resolve`.
///
/// Built by [`Plugin::from_static_query`], [`Plugin::from_registration`],
/// [`Plugin::load_system_library`] and [`Plugin::load_system_library_image`]
/// after every check of [`crate::checks`] passed and the plugin's `load`
/// succeeded. Dropping it (or [`Plugin::unload`]) calls the plugin's
/// `unload` exactly once, then releases the code it came from, then the
/// host allocator (so library finalizers may still free through it).
///
/// # Unload policy
/// A library built with `xplug-sdk` (it exports `xplug_plugin_exports`) is
/// a Rust library, and is pinned when opened ([`RawLibrary::pin`]): its
/// plugin is unloaded as any other, but its code stays mapped for the rest
/// of the process, because Rust thread-locals with destructors may still
/// be alive on threads that outlive the plugin. Other libraries (C, C++)
/// are closed when their plugin drops. See
/// `docs/loading.md#unload-policy`.
///
/// Function and context pointers the plugin handed out through `resolve`
/// are valid only while the `Plugin` lives.
///
/// # Example
///
/// A plugin linked into the program:
///
/// ```
/// use std::ffi::{c_void, CStr};
/// use xplug_providers::abi::{
///     EnvironmentV0, Features, Header, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status,
///     StringPair, Version,
/// };
/// use xplug_providers::{ImportProvider, LoadParamList, Plugin};
///
/// static HEADER: Header = Header {
///     version: Version::LATEST,
///     name: c"doc_static".as_ptr(),
///     description: c"a plugin that resolves nothing".as_ptr(),
///     features: Features::STANDALONE,
///     sanitizer: Sanitizer::NONE,
///     reserved: [0; 8],
/// };
/// unsafe extern "C" fn load(
///     _: *const EnvironmentV0, _: usize, _: *const StringPair, _: *mut *mut c_void,
/// ) -> Status {
///     Status::OK
/// }
/// unsafe extern "C" fn resolve(
///     _: *mut c_void, _: *const ResolveParamsV0, _: *mut Resolution,
/// ) -> Status {
///     Status::OK
/// }
/// struct Table(PluginV0);
/// // SAFETY: the table is immutable and its functions are thread-safe.
/// unsafe impl Sync for Table {}
/// static TABLE: Table = Table(PluginV0 {
///     header: &HEADER, load: Some(load), unload: None, resolve: Some(resolve),
/// });
/// unsafe extern "C" fn query(_: Version, _: *mut c_void) -> *mut *const Header {
///     (&raw const TABLE).cast_mut().cast()
/// }
///
/// // SAFETY: `query` returns a valid, immutable v0 table for the whole program.
/// let plugin = unsafe { Plugin::from_static_query(query, &LoadParamList::new()) }?;
/// assert_eq!(plugin.name(), "doc_static");
/// assert_eq!(plugin.info().description, "a plugin that resolves nothing");
/// assert_eq!(plugin.unload().live_allocations, 0);
/// # Ok::<(), xplug_providers::Error>(())
/// ```
///
/// # Thread-safety
/// `Send` and `Sync`: `resolve` may be called from any thread, concurrently
/// (the v0 ABI requires plugins to allow it).
pub struct Plugin {
    /// Unloaded first (explicitly in `Drop`).
    instance: RawInstance<'static>,
    /// The header name, shared with every [`Error::NotFound`] it returns.
    name: ProviderName,
    info: PluginInfo,
    source: PluginSource,
    /// Import names listed by the plugin's `xplug_plugin_exports`, if any.
    exports: Option<Vec<String>>,
    /// Load parameters declared by the plugin's `xplug_plugin_params`, if any.
    params: Option<Vec<crate::raw::ParamInfo>>,
    /// What keeps the plugin's code mapped (an open library): released
    /// after `unload`.
    _code: Option<Arc<dyn Any + Send + Sync>>,
    /// The host allocator given to `load`: released last, after the code.
    allocator: Arc<CountingAllocator>,
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("info", &self.info)
            .field("source", &self.source)
            .field("allocation_stats", &self.allocation_stats())
            .finish_non_exhaustive()
    }
}

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
            required_features: Features::NONE,
            loader: "static",
            code: None,
            params_list: None,
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
            required_features: Features::NONE,
            loader: "static",
            code: None,
            params_list: None,
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
    /// Those of [`RawLibrary::open`] and [`RawLibrary::query`], then those
    /// of [`Plugin::from_static_query`].
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
        let path = path.as_ref();
        // SAFETY: forwarded to the caller.
        let library = unsafe { RawLibrary::open(path) }?;
        // SAFETY: forwarded to the caller.
        unsafe { from_library(library, PluginSource::SystemLibrary { path: path.to_path_buf() }, params) }
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
        // SAFETY: forwarded to the caller.
        unsafe { from_library(library, PluginSource::Memory { name: name.to_owned() }, params) }
    }

    /// The name from the plugin's header.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header metadata copied at load.
    #[must_use]
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Where the plugin came from.
    #[must_use]
    pub fn source(&self) -> &PluginSource {
        &self.source
    }

    /// The import names the plugin lists through xplug's optional
    /// `xplug_plugin_exports` export (every `xplug-sdk` shared library has
    /// it), or `None` when it has no such export.
    #[must_use]
    pub fn exports(&self) -> Option<&[String]> {
        self.exports.as_deref()
    }

    /// The load parameters the plugin declares through xplug's optional
    /// `xplug_plugin_params` export (`xplug-sdk` plugins with
    /// `params(...)`), or `None` when it has no such export.
    #[must_use]
    pub fn params(&self) -> Option<&[crate::raw::ParamInfo]> {
        self.params.as_deref()
    }

    /// The current counters of the host allocator this plugin was given.
    #[must_use]
    pub fn allocation_stats(&self) -> AllocationStats {
        self.allocator.stats()
    }

    /// Unloads the plugin now and returns what it still held from the host
    /// allocator afterwards: anything live is a leak (also logged with
    /// `tracing::warn!`). Dropping a `Plugin` does the same, silently
    /// discarding the figures.
    pub fn unload(mut self) -> AllocationStats {
        self.shutdown();
        self.allocator.stats()
    }

    /// How messages name this plugin: its name and where it came from.
    fn label(&self) -> String {
        label(&self.name, &self.source)
    }

    /// Calls `unload` once, then reports leaks; idempotent.
    fn shutdown(&mut self) {
        let span = tracing::info_span!("xplug.plugin.unload", plugin = %self.name, source = %self.source);
        let _entered = span.enter();
        if !self.instance.unload_in_place() {
            return;
        }
        let stats = self.allocator.stats();
        if stats.live_allocations != 0 || stats.live_bytes != 0 {
            tracing::warn!(
                plugin = %self.name,
                leaked_allocations = stats.live_allocations,
                leaked_bytes = stats.live_bytes,
                "plugin {} leaked {} allocation(s), {} byte(s) of host memory after unload; \
                 free them in the plugin's unload",
                self.label(),
                stats.live_allocations,
                stats.live_bytes,
            );
        }
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.shutdown();
        // Then the fields drop in order: the instance (already unloaded),
        // the code (library finalizers run), the allocator.
    }
}

impl ImportProvider for Plugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        self.exports.clone()
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        let span = tracing::debug_span!(
            "xplug.plugin.resolve",
            plugin = &*self.name,
            names = request.len(),
            outcome = tracing::field::Empty
        );
        let _entered = span.enter();
        let result = match self.call_resolve(request) {
            // Judge from the slots, not from the plugin's word: a plugin
            // claiming success with a required slot empty gets NotFound.
            StatusCode::OK => request.outcome(&self.name),
            StatusCode::NOT_FOUND => Err(Error::NotFound {
                provider: self.name.clone(),
                missing: request.missing_required().count(),
            }),
            code => Err(self.resolve_failed(code, request.len())),
        };
        if !span.is_disabled() {
            match &result {
                Ok(resolution) if resolution.contains(Resolution::MISSING_OPTIONAL) => {
                    span.record("outcome", "missing_optional")
                }
                Ok(_) => span.record("outcome", "ok"),
                Err(error) => span.record("outcome", tracing::field::display(error.code())),
            };
        }
        result
    }

    /// One call of the plugin's `resolve`, its status taken at its word for
    /// whether the walk goes on (the caller judges the slots): no pass over
    /// the slots, no span, no error value unless the plugin failed.
    #[inline(always)]
    fn supply(&self, request: &mut ResolveRequest<'_>) -> Result<(), Error> {
        match self.call_resolve(request) {
            StatusCode::OK | StatusCode::NOT_FOUND => Ok(()),
            code => Err(self.resolve_failed(code, request.len())),
        }
    }
}

impl Plugin {
    /// Calls the plugin's `resolve` once on `request` and returns the status
    /// code it gave; an empty request is `OK` without calling the plugin.
    #[inline(always)]
    fn call_resolve(&self, request: &mut ResolveRequest<'_>) -> StatusCode {
        if request.is_empty() {
            return StatusCode::OK;
        }
        self.instance.resolve(request).0
    }

    /// The [`Error::ResolveFailed`] for a `resolve` of `names` imports that
    /// returned `code`.
    #[cold]
    #[inline(never)]
    fn resolve_failed(&self, code: StatusCode, names: usize) -> Error {
        Error::ResolveFailed {
            provider: self.name.to_string(),
            code,
            message: format!("its resolve failed for {names} import(s)"),
        }
    }
}

/// How messages name a plugin: "`name` (source)".
fn label(name: &str, source: &PluginSource) -> String {
    format!("`{name}` ({source})")
}

/// How a loader describes the plugin it is loading.
pub(crate) struct LoadSite {
    /// The name to use before the header is read, or when it has none.
    pub(crate) fallback_name: String,
    pub(crate) source: PluginSource,
    /// Features this loader insists on (the embedded-ELF loader needs
    /// STANDALONE).
    pub(crate) required_features: Features,
    /// The loader's name, for the required-features message.
    pub(crate) loader: &'static str,
    /// Kept alive inside the plugin until after `unload`.
    pub(crate) code: Option<Arc<dyn Any + Send + Sync>>,
    /// Reads the load parameters the plugin declares (its
    /// `xplug_plugin_params` list), called only after the header and table
    /// checks pass; `None` for loaders that have no such list.
    pub(crate) params_list: Option<Box<dyn FnOnce() -> Option<Vec<crate::raw::ParamInfo>>>>,
}

/// Loads the plugin in an open library and records its exports list.
///
/// # Safety
/// As [`Plugin::load_system_library`].
unsafe fn from_library(
    library: RawLibrary,
    source: PluginSource,
    params: &LoadParamList,
) -> Result<Plugin, Error> {
    let fallback_name = library
        .path()
        .file_name()
        .map_or_else(|| library.path().display().to_string(), |name| name.to_string_lossy().into_owned());
    let query = library.query()?.as_fn();
    // The unload policy (`docs/loading.md#unload-policy`): a Rust library
    // stays mapped after its plugin is dropped, before any of its code that
    // could leave thread-local destructors behind (its `load`) runs.
    if library.is_xplug_sdk() {
        library.pin()?;
    }
    let library = Arc::new(library);
    let site = LoadSite {
        fallback_name,
        source,
        required_features: Features::NONE,
        loader: "system library",
        code: Some(Arc::clone(&library) as Arc<dyn Any + Send + Sync>),
        params_list: Some(Box::new({
            let library = Arc::clone(&library);
            move || library.params()
        })),
    };
    // SAFETY: `query` is the library's v0 export (the caller vouched for the
    // library); the library stays open while the plugin holds `site.code`,
    // which outlives the plugin's instance, so `'static` is never observed
    // beyond the library's life.
    let query = unsafe { RawQuery::new(query) };
    let mut plugin = load_checked(query, site, params).map_err(|error| match error {
        // The plugin's own explanation, when it keeps one.
        Error::LoadFailed { plugin, code, params, reported: None } => Error::LoadFailed {
            plugin,
            code,
            params,
            reported: library.load_error().map(crate::error::PluginMessage::new),
        },
        other => other,
    })?;
    // Only a plugin that passed every check is asked for its names.
    plugin.exports = library.exports();
    Ok(plugin)
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
    let header = table.header();
    let shown_name = header.as_ref().and_then(|header| header.name.clone()).unwrap_or(site.fallback_name);
    span.record("name", shown_name.as_str());
    // How errors name the plugin; formatted only when one is built.
    let plugin = || label(&shown_name, &site.source);
    checks::check_plugin(header.as_ref(), table.entry_points(), site.loader, site.required_features)
        .map_err(|reason| Error::Incompatible { plugin: plugin(), reason })?;
    let Some(header) = header else {
        return Err(Error::Incompatible { plugin: plugin(), reason: checks::Incompatibility::NullHeader });
    };
    // A plugin that lists its parameters is given no other key.
    let declared = site.params_list.and_then(|list| list());
    if let Some(declared) = &declared {
        checks::check_params(declared, params)
            .map_err(|reason| Error::Incompatible { plugin: plugin(), reason })?;
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
            Error::LoadFailed { plugin: plugin(), code, params: params.len(), reported: None }
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
            name: shown_name,
            description: header.description.unwrap_or_default(),
            version: header.version,
            features: header.features,
            sanitizer: header.sanitizer,
        },
        source: site.source,
        exports: None,
        params: declared,
        _code: site.code,
        allocator,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;

    use xplug_abi::{EnvironmentV0, Header, PluginV0, ResolveParamsV0, Status};

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

    fn site(required_features: Features) -> LoadSite {
        LoadSite {
            fallback_name: "fallback".to_owned(),
            source: PluginSource::Static,
            required_features,
            loader: "embedded ELF",
            code: None,
            params_list: None,
        }
    }

    #[test]
    fn loader_required_features_are_enforced() {
        // SAFETY: `query` returns the immutable, valid table above.
        let query = unsafe { RawQuery::new(query) };
        let error = load_checked(query, site(Features::STANDALONE), &LoadParamList::new()).unwrap_err();
        assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
        assert!(
            matches!(&error, Error::Incompatible { plugin, reason: checks::Incompatibility::MissingFeatures { missing, .. } }
                if plugin == "`unit` (linked in)" && *missing == Features::STANDALONE),
            "{error:?}"
        );
    }

    #[test]
    fn a_nameless_header_is_refused() {
        // SAFETY: `nameless_query` returns the immutable, valid table above.
        let query = unsafe { RawQuery::new(nameless_query) };
        let error = load_checked(query, site(Features::NONE), &LoadParamList::new()).unwrap_err();
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
        let plugin = load_checked(query, site(Features::NONE), &LoadParamList::new()).unwrap();
        assert_eq!(plugin.name(), "unit");
        assert_eq!(plugin.info().description, "");
        assert_eq!(plugin.unload(), AllocationStats::default());
    }
}
