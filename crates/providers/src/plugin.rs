//! The checked v0 plugin: resolve judged from the slots, unload once, then
//! the code is released.
//!
//! A plugin is made one way: a [`Loader`](crate::Loader) opens its
//! [`Code`], and [`Code::load`] adds to the raw steps of [`crate::raw`] the
//! checks of [`crate::compatibility`]. This module is that step and what a loaded
//! plugin is and does: its name and code, `resolve`, tracing and the
//! unload order. What only one kind of code has is its loader's
//! ([`Code::downcast_ref`]).

use std::fmt;
use std::sync::{Arc, OnceLock};

use xplug_abi::{Features, Resolution, Sanitizer, StatusCode, Version};

use crate::compatibility;
use crate::counting_allocator::{AllocationStats, CountingAllocator};
use crate::error::{Error, PluginMessage};
use crate::loader::{Code, MappedCode};
use crate::name::ProviderName;
use crate::params::LoadParamList;
use crate::provider::ImportProvider;
use crate::raw::{ImportLayoutInfo, ParamDeclInfo, RawInstance, RawLoadError};
use crate::request::ResolveRequest;

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

/// An owned, loaded v0 plugin: an [`ImportProvider`] over the plugin's
/// `resolve`.
///
/// Made by [`Code::load`], from the code a [`Loader`](crate::Loader)
/// opened, after every check of
/// [`crate::compatibility`] passed and the plugin's `load` succeeded. Dropping
/// it (or [`Plugin::unload`]) calls the plugin's `unload` exactly once,
/// then releases the code it came from, then the host allocator (so
/// library finalizers may still free through it).
///
/// # Unload policy
/// A library built with `xplug-sdk` (it exports `xplug_plugin_exports`) is
/// a Rust library, and is pinned when opened
/// ([`RawLibrary::pin`](crate::raw::RawLibrary::pin)): its
/// plugin is unloaded as any other, but its code stays mapped for the rest
/// of the process, because Rust thread-locals with destructors may still
/// be alive on threads that outlive the plugin. Other libraries (C, C++)
/// are closed when their plugin drops. See
/// `docs/src/reference/loading.md#unload-policy`.
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
/// use xplug_providers::{ImportProvider, LoadParamList, STATIC};
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
/// let plugin = unsafe { STATIC.query_code("doc_static", query) }.load(&LoadParamList::new())?;
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
    pub(crate) instance: RawInstance<'static>,
    /// The header name, shared with every [`Error::NotFound`] it returns.
    pub(crate) name: ProviderName,
    pub(crate) info: PluginInfo,
    /// Import names listed by the plugin's `xplug_plugin_exports`, if any.
    /// Read on first use, like the two below: a load looks up only what it
    /// needs (each optional export a C plugin lacks is a failed `dlsym`,
    /// which formats an error message).
    pub(crate) exports: OnceLock<Option<Vec<String>>>,
    /// Load parameters declared by the plugin's `xplug_plugin_params`, if
    /// any (read at load when parameters are given, to check them).
    pub(crate) param_decls: OnceLock<Option<Vec<ParamDeclInfo>>>,
    /// Args layouts listed by the plugin's `xplug_import_layouts`, if any.
    pub(crate) import_layouts: OnceLock<Option<Vec<ImportLayoutInfo>>>,
    /// What keeps the plugin's code mapped: released after `unload`.
    pub(crate) code: Code,
    /// The host allocator given to `load`: released last, after the code.
    pub(crate) allocator: Arc<CountingAllocator>,
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("info", &self.info)
            .field("code", &self.code)
            .field("allocation_stats", &self.allocation_stats())
            .finish_non_exhaustive()
    }
}

impl Plugin {
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

    /// The import names the plugin lists through xplug's optional
    /// `xplug_plugin_exports` export (every `xplug-sdk` plugin has it, as
    /// an export or, linked in, in its registration), or `None` when it has
    /// no such export.
    #[must_use]
    pub fn exports(&self) -> Option<&[String]> {
        self.exports.get_or_init(|| self.code.optional_exports()?.exports()).as_deref()
    }

    /// The load parameters the plugin declares through xplug's optional
    /// `xplug_plugin_params` export (`xplug-sdk` plugins with
    /// `params(...)`), or `None` when it has no such export.
    #[must_use]
    pub fn param_decls(&self) -> Option<&[ParamDeclInfo]> {
        self.param_decls.get_or_init(|| self.code.optional_exports()?.param_decls()).as_deref()
    }

    /// The args layout of each import the plugin describes through
    /// xplug's optional `xplug_import_layouts` export (`xplug-sdk`
    /// plugins), or `None` when it has no such export: what a tool calling
    /// an import by hand checks its args block against.
    #[must_use]
    pub fn import_layouts(&self) -> Option<&[ImportLayoutInfo]> {
        self.import_layouts.get_or_init(|| self.code.optional_exports()?.import_layouts()).as_deref()
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

    /// The code this plugin runs from, as its [`Loader`](crate::Loader)
    /// opened it: its details ([`Code::details`]) and optional exports.
    #[must_use]
    pub fn code(&self) -> &Code {
        &self.code
    }

    /// Unloads the plugin now and takes its mapped code out when it is a
    /// `T`, with the host allocator it was given (which must outlive the
    /// code, so its finalisers may still free through it); the plugin
    /// itself, still loaded and unchanged, when its code is no `T`.
    #[expect(
        clippy::result_large_err,
        reason = "the plugin itself is the error, given back unchanged as `Arc::try_unwrap` gives back the `Arc`"
    )]
    pub(crate) fn into_mapped<T: MappedCode>(mut self) -> Result<(Box<T>, Arc<CountingAllocator>), Self> {
        if self.code.downcast_ref::<T>().is_none() {
            return Err(self);
        }
        // The code is still mapped here: `unload` runs with it.
        self.shutdown();
        // What stays in `self` keeps the record, for its last messages.
        let Some(mapped) = self.code.take_mapped::<T>() else {
            unreachable!("checked above: the code is a `T`")
        };
        Ok((mapped, Arc::clone(&self.allocator)))
    }

    /// How messages name this plugin: its name and where it came from.
    fn label(&self) -> String {
        self.code.plugin_label(&self.name)
    }

    /// Calls `unload` once, then reports leaks; idempotent.
    fn shutdown(&mut self) {
        let span = tracing::info_span!("xplug.plugin.unload", plugin = %self.name, source = %self.code);
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

impl Code {
    /// Loads the plugin in this code, the one way a [`Plugin`] is made:
    /// the code's query function, the checks of [`crate::compatibility`] (with
    /// the loader's name and required features), then the plugin's `load`
    /// with `params`. The code stays mapped until the plugin is dropped.
    ///
    /// Safe: the trust was placed when a [`Loader`](crate::Loader) opened
    /// the code (an `unsafe` call).
    ///
    /// ```no_run
    /// use xplug_providers::{LoadParamList, Loader, SYSTEM_LIBRARY};
    ///
    /// let params = LoadParamList::new().with("multiplier", "2");
    /// // SAFETY: the library is a trusted v0 plugin.
    /// let code = unsafe { SYSTEM_LIBRARY.open("target/plugins/release/libsample_system.so") }?;
    /// let plugin = code.load(&params)?;
    /// println!("loaded {} ({})", plugin.name(), plugin.info().description);
    /// # Ok::<(), xplug_providers::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] when the query answers NULL,
    /// [`Error::Incompatible`] when a check fails, [`Error::LoadFailed`]
    /// when the plugin's `load` fails (its `unload` is then not called); a
    /// refused `load` carries the plugin's own explanation when it gives
    /// one.
    pub fn load(self, params: &LoadParamList) -> Result<Plugin, Error> {
        let code = self;
        let span = tracing::info_span!(
            "xplug.plugin.load",
            plugin = %code.fallback_name(),
            source = %code,
            name = tracing::field::Empty
        );
        let _entered = span.enter();

        // SAFETY: the query borrows the code's `MappedCode`, boxed (it does
        // not move) and held by the plugin until after its instance is
        // unloaded: `'static` is never observed beyond the code's life.
        let query = unsafe { code.query().detach() };
        let Some(table) = query.query(Version::LATEST) else {
            return Err(Error::UnsupportedVersion {
                plugin: code.plugin_label(code.fallback_name()),
                supported: Version::LATEST,
            });
        };
        let header = table.header().map_err(|reason| Error::Incompatible {
            plugin: code.plugin_label(code.fallback_name()),
            reason,
        })?;
        let shown_name = header
            .as_ref()
            .and_then(|header| header.name.clone())
            .unwrap_or_else(|| code.fallback_name().to_owned());
        span.record("name", shown_name.as_str());
        // How errors name the plugin; formatted only when one is built.
        let plugin = || code.plugin_label(&shown_name);
        let header = compatibility::judge_plugin(
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
                compatibility::judge_params(declared, params)
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
                reason: compatibility::Incompatibility::MissingFunction { function },
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
}

impl ImportProvider for Plugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        self.exports().map(<[String]>::to_vec)
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
