//! The checked v0 plugin: resolve judged from the slots, unload once, then
//! the code is released.
//!
//! Every constructor lives in [`crate::loaders`], which adds to the raw
//! steps of [`crate::raw`] the checks of [`crate::checks`]; this module is
//! what a loaded plugin is and does: its name and source, `resolve`,
//! tracing and the unload order.

use std::fmt;
use std::sync::{Arc, OnceLock};

use xplug_abi::{Features, Resolution, Sanitizer, StatusCode, Version};
use xplug_elf::ElfImage;

use crate::loaders::{ElfCode, LibraryCode};
use crate::raw::{ImportLayoutInfo, ParamDeclInfo, RawInstance, RawLibrary};
use crate::{
    AllocationStats, Code, CountingAllocator, Error, ImportProvider, PluginSource, ProviderName,
    ResolveRequest,
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

/// An owned, loaded v0 plugin: an [`ImportProvider`] over the plugin's
/// `resolve`.
///
/// Built by the constructors of the `loaders` module
/// ([`Plugin::from_static_query`], [`Plugin::from_registration`],
/// [`Plugin::load_system_library`], [`Plugin::load_system_library_image`],
/// [`Plugin::from_raw_library`], [`Plugin::load_embedded_elf`],
/// [`Plugin::load_embedded_elf_image`]) after every check of
/// [`crate::checks`] passed and the plugin's `load` succeeded. Dropping
/// it (or [`Plugin::unload`]) calls the plugin's `unload` exactly once,
/// then releases the code it came from, then the host allocator (so
/// library finalizers may still free through it).
///
/// # Unload policy
/// A library built with `xplug-sdk` (it exports `xplug_plugin_exports`) is
/// a Rust library, and is pinned when opened ([`RawLibrary::pin`]): its
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
            .field("source", self.code.source())
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

    /// Where the plugin came from.
    #[must_use]
    pub fn source(&self) -> &PluginSource {
        self.code.source()
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

    /// The library this plugin runs from, when the OS loader opened it
    /// ([`Plugin::load_system_library`], [`Plugin::from_raw_library`]):
    /// the raw layer's view of the same code, for what the checked layer
    /// does not read (`load_error`, symbol kinds).
    #[must_use]
    pub fn raw_library(&self) -> Option<&RawLibrary> {
        self.code.downcast_ref::<LibraryCode>().map(|code| &code.library)
    }

    /// The mapped image this plugin runs from, when xplug's embedded ELF
    /// loader mapped it ([`Plugin::load_embedded_elf`]): its
    /// [`plan`](ElfImage::plan) says which FatELF record was chosen and
    /// where each segment lies.
    #[must_use]
    pub fn elf_image(&self) -> Option<&ElfImage> {
        self.code.downcast_ref::<ElfCode>().map(|code| &code.image)
    }

    /// The code this plugin runs from, as its [`Loader`](crate::Loader)
    /// opened it: its details ([`Code::details`]) and optional exports.
    #[must_use]
    pub fn code(&self) -> &Code {
        &self.code
    }

    /// Unloads the plugin and gives back the library it ran from, open:
    /// the reverse of [`Plugin::from_raw_library`]. The host allocator the
    /// plugin was given stays alive until the library is closed, so its
    /// finalisers may still free through it.
    ///
    /// # Errors
    /// The plugin itself, still loaded and unchanged, when it did not come
    /// from a library.
    #[expect(
        clippy::result_large_err,
        reason = "the plugin itself is the error, given back unchanged as `Arc::try_unwrap` gives back the `Arc`"
    )]
    pub fn into_raw_library(mut self) -> Result<RawLibrary, Self> {
        if self.raw_library().is_none() {
            return Err(self);
        }
        // The library is still open here: `unload` runs with the code
        // mapped.
        self.shutdown();
        // What stays in `self` keeps the source, for its last messages.
        let released = crate::loaders::released_code(self.code.source().clone());
        let code = std::mem::replace(&mut self.code, released);
        let mut library = match code.into_mapped::<LibraryCode>() {
            Ok(code) => code.library,
            Err(_) => unreachable!("checked above: the code is a library"),
        };
        let allocator = Arc::clone(&self.allocator);
        library.keep_until_closed(allocator);
        Ok(library)
    }

    /// How messages name this plugin: its name and where it came from.
    fn label(&self) -> String {
        self.code.source().plugin_label(&self.name)
    }

    /// Calls `unload` once, then reports leaks; idempotent.
    fn shutdown(&mut self) {
        let span =
            tracing::info_span!("xplug.plugin.unload", plugin = %self.name, source = %self.code.source());
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
