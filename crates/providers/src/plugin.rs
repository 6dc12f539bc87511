//! The v0 plugin wrapper: load checks, resolve, unload.
//!
//! Every loader (static, system library, and later embedded ELF) ends up in
//! [`load_v0`] with the plugin's query function; this module is the FFI edge
//! where the plugin's table is read and its functions are called.

use std::any::Any;
use std::ffi::{CStr, c_char, c_void};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use xplug_abi::{
    EnvironmentV0, Features, Header, PluginV0, QueryFn, Resolution, ResolveParamsV0, Sanitizer, Status,
    StatusCode, UnloadFnV0, Version,
};

use crate::host_alloc::{AllocationStats, HostAllocator};
use crate::{Error, ImportProvider, LoadParams, ProviderName, ResolveRequest};

/// The sanitizer this host is built with.
///
/// Always [`Sanitizer::NONE`]: stable Rust cannot build a sanitized host
/// (`-Zsanitizer` is nightly-only), so every sanitized plugin is refused.
pub const HOST_SANITIZER: Sanitizer = Sanitizer::NONE;

/// What a plugin's header says about it, copied at load time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The header's `name` (empty when the plugin gave none).
    pub name: String,
    /// The header's `description`.
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
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Static => f.write_str("static"),
            Self::SystemLibrary { path } => write!(f, "{}", path.display()),
            Self::Memory { name } => write!(f, "memory image `{name}`"),
        }
    }
}

/// The inner (non-null) type of a v0 `resolve` pointer.
type ResolveFn = unsafe extern "C" fn(*mut c_void, *const ResolveParamsV0, *mut Resolution) -> Status;

/// An owned, loaded v0 plugin.
///
/// Created by [`crate::StaticPlugin`] and [`crate::SystemLibraryPlugin`]
/// after every load check passed and the plugin's `load` succeeded. It
/// resolves imports through the plugin's `resolve` ([`ImportProvider`]) and,
/// when dropped (or on [`Plugin::unload`]), calls the plugin's `unload`
/// exactly once and then releases the library it came from.
///
/// Function and context pointers the plugin handed out through `resolve`
/// are valid only while the `Plugin` lives.
pub struct Plugin {
    info: PluginInfo,
    source: PluginSource,
    /// The header name (or the loader's fallback), shared with every
    /// [`Error::NotFound`] this plugin returns.
    provider_name: ProviderName,
    /// How errors and logs name the plugin: its name, plus where it came from.
    label: String,
    resolve_fn: ResolveFn,
    unload_fn: UnloadFnV0,
    state: *mut c_void,
    unloaded: bool,
    /// Import names listed by the plugin's `xplug_plugin_exports`, if any.
    exports: Option<Vec<String>>,
    /// The allocator's `self`; must outlive `unload`, so it is dropped after
    /// `Drop::drop` has run.
    counters: Arc<HostAllocator>,
    /// Whatever keeps the plugin's code mapped (an open library); dropped
    /// last, after `unload`.
    _keep_alive: Option<Arc<dyn Any + Send + Sync>>,
}

// SAFETY: the raw pointers in `Plugin` are the plugin's state and functions.
// The v0 ABI requires `resolve` to be callable from any thread, concurrently,
// and `unload` from whichever thread drops the plugin; the host allocator
// (`counters`) uses atomics only. Nothing is tied to the loading thread.
unsafe impl Send for Plugin {}
// SAFETY: `&Plugin` only allows `resolve` calls (thread-safe per the ABI) and
// reads of immutable metadata and atomic counters.
unsafe impl Sync for Plugin {}

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
    /// The name from the plugin's header.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.info.name
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

    /// Records the names a loader read from `xplug_plugin_exports`.
    pub(crate) fn set_exports(&mut self, exports: Option<Vec<String>>) {
        self.exports = exports;
    }

    /// The current counters of the host allocator this plugin was given.
    #[must_use]
    pub fn allocation_stats(&self) -> AllocationStats {
        self.counters.stats()
    }

    /// Unloads the plugin now and returns what it still held from the host
    /// allocator afterwards: anything live is a leak (also logged with
    /// `tracing::warn!`). Dropping a `Plugin` does the same, silently
    /// discarding the figures.
    pub fn unload(mut self) -> AllocationStats {
        self.shutdown()
    }

    /// Calls `unload` once, then reports leaks; idempotent.
    fn shutdown(&mut self) -> AllocationStats {
        if self.unloaded {
            return self.counters.stats();
        }
        self.unloaded = true;
        let span = tracing::info_span!("xplug.plugin.unload", plugin = %self.label, leaked_allocations = tracing::field::Empty, leaked_bytes = tracing::field::Empty);
        let _entered = span.enter();
        if let Some(unload) = self.unload_fn {
            // SAFETY: `state` is what this plugin's successful `load` produced;
            // `unload` is called exactly once (guarded by `unloaded`), while the
            // library and the allocator counters are still alive.
            unsafe { unload(self.state) };
        }
        self.state = std::ptr::null_mut();
        let stats = self.counters.stats();
        span.record("leaked_allocations", stats.live_allocations);
        span.record("leaked_bytes", stats.live_bytes);
        if stats.live_allocations != 0 || stats.live_bytes != 0 {
            tracing::warn!(
                plugin = %self.label,
                leaked_allocations = stats.live_allocations,
                leaked_bytes = stats.live_bytes,
                "plugin {} leaked {} allocation(s), {} byte(s) of host memory after unload; \
                 free them in the plugin's unload",
                self.label,
                stats.live_allocations,
                stats.live_bytes,
            );
        }
        stats
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl ImportProvider for Plugin {
    fn name(&self) -> &str {
        &self.info.name
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        self.exports.clone()
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        let span = tracing::debug_span!(
            "xplug.plugin.resolve",
            plugin = &*self.provider_name,
            names = request.len(),
            outcome = tracing::field::Empty
        );
        let _entered = span.enter();
        let result = match self.resolve_unjudged(request) {
            // Judge from the slots, not from the plugin's word: a plugin
            // claiming success with a required slot empty gets NotFound.
            Ok(StatusCode::OK) => request.outcome(&self.provider_name),
            Ok(_) => Err(Error::NotFound {
                provider: self.provider_name.clone(),
                missing: request.missing_required().count(),
            }),
            Err(error) => Err(error),
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
}

impl Plugin {
    /// Calls the plugin's `resolve` once on `request` and returns its status
    /// code when it is `OK` or `NOT_FOUND`, without judging the slots,
    /// tracing or building an error: for a manager that asks several
    /// providers and judges the slots once at the end. Any other code is a
    /// real failure, returned as [`Error::ResolveFailed`]. An empty request
    /// is `OK` without calling the plugin.
    ///
    /// # Errors
    /// [`Error::ResolveFailed`] when the plugin's status is neither `OK` nor
    /// `NOT_FOUND`.
    #[inline]
    pub fn resolve_unjudged(&self, request: &mut ResolveRequest<'_>) -> Result<StatusCode, Error> {
        if request.is_empty() {
            return Ok(StatusCode::OK);
        }
        let params = request.as_params();
        let mut resolution = Resolution::NONE;
        // SAFETY: `state` is the live state from `load` (the plugin is not
        // unloaded while `&self` exists); `params` points at `request`'s
        // arrays, each `count` long, which stay borrowed for the call;
        // `resolution` is a valid out-pointer.
        let status = unsafe { (self.resolve_fn)(self.state, &params, &mut resolution) };
        match status.code() {
            code @ (StatusCode::OK | StatusCode::NOT_FOUND) => Ok(code),
            code => Err(self.resolve_failed(code, request.len())),
        }
    }

    /// The error for a resolve that failed with `code`.
    #[cold]
    #[inline(never)]
    fn resolve_failed(&self, code: StatusCode, names: usize) -> Error {
        Error::ResolveFailed {
            provider: self.info.name.clone(),
            code,
            message: format!("the plugin's resolve returned {code} for {names} import(s)"),
        }
    }
}

/// How a loader describes the plugin it is loading.
pub(crate) struct LoadSite {
    /// Names the plugin before its header is read (a path, or
    /// "static plugin `x`").
    pub(crate) label: String,
    /// Appended to the header name in later messages (" (path)"), or empty.
    pub(crate) origin: String,
    /// The name to use when the header has none.
    pub(crate) fallback_name: String,
    pub(crate) source: PluginSource,
    /// Features this loader insists on (the embedded-ELF loader needs
    /// STANDALONE).
    pub(crate) required_features: Features,
    /// The loader's name, for the required-features message.
    pub(crate) loader: &'static str,
    /// Kept alive inside the plugin until after `unload`.
    pub(crate) keep_alive: Option<Arc<dyn Any + Send + Sync>>,
}

/// Reads a NUL-terminated string from a plugin, lossily, or "" for NULL.
///
/// # Safety
/// `ptr` is NULL or a valid NUL-terminated string.
unsafe fn plugin_string(ptr: *const c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: non-null and NUL-terminated (caller's contract).
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }
}

fn incompatible(plugin: &str, code: StatusCode, reason: String) -> Error {
    Error::Incompatible { plugin: plugin.to_owned(), code, reason }
}

/// Runs SPEC §3 steps 2 to 4 on `query` and wraps the result.
///
/// # Safety
/// `query` implements the v0 query contract: it returns NULL or a pointer to
/// a v0 table (header pointer, then `load`, `unload`, `resolve`) that stays
/// valid and unchanged, with NUL-terminated header strings, for as long as
/// `site.keep_alive` is held; the table's functions obey the v0 ABI.
pub(crate) unsafe fn load_v0(query: QueryFn, site: LoadSite, params: &LoadParams) -> Result<Plugin, Error> {
    let span = tracing::info_span!(
        "xplug.plugin.load",
        plugin = %site.label,
        source = %site.source,
        name = tracing::field::Empty
    );
    let _entered = span.enter();

    // Step 2: ask for the newest version we speak.
    // SAFETY: `query` follows the v0 query contract (caller's promise).
    let table_ptr = unsafe { query(Version::LATEST, std::ptr::null_mut()) };
    if table_ptr.is_null() {
        return Err(Error::UnsupportedVersion { plugin: site.label, supported: Version::LATEST });
    }
    // SAFETY: a non-null result points to the plugin's v0 table, whose first
    // field is the header pointer (caller's promise); we copy it out.
    let table: PluginV0 = unsafe { table_ptr.cast::<PluginV0>().read() };
    if table.header.is_null() {
        return Err(incompatible(
            &site.label,
            StatusCode::INVALID_ARGUMENT,
            "its v0 table has a NULL header pointer; fix the plugin's query function".to_owned(),
        ));
    }
    // SAFETY: non-null header pointer into the plugin's immutable data.
    let header: Header = unsafe { table.header.read() };
    // SAFETY: header strings are NULL or NUL-terminated (v0 contract).
    let (name, description) = unsafe { (plugin_string(header.name), plugin_string(header.description)) };
    let shown_name = if name.is_empty() { site.fallback_name.as_str() } else { name.as_str() };
    let plugin = format!("`{shown_name}`{}", site.origin);
    span.record("name", shown_name);

    // Step 3: header checks, in order.
    if header.version.0 == 0 {
        return Err(incompatible(
            &plugin,
            StatusCode::INVALID_ARGUMENT,
            format!(
                "its header version is {} (not a valid version); expected {}; \
                 rebuild it against the current plugin header",
                header.version,
                Version::LATEST
            ),
        ));
    }
    if header.version > Version::LATEST {
        return Err(incompatible(
            &plugin,
            StatusCode::FAILED_PRECONDITION,
            format!(
                "its header version {} is newer than this runtime's {}; \
                 use a newer runtime or build the plugin for version {}",
                header.version,
                Version::LATEST,
                Version::LATEST
            ),
        ));
    }
    if header.features.contains(Features::FULL_STATUS) {
        return Err(incompatible(
            &plugin,
            StatusCode::FAILED_PRECONDITION,
            "it returns full iree_status_t objects (FULL_STATUS feature) but this host only \
             understands plain status codes; rebuild the plugin without full status support"
                .to_owned(),
        ));
    }
    if header.sanitizer != Sanitizer::NONE && header.sanitizer != HOST_SANITIZER {
        let reason = match header.sanitizer.compiler_flag() {
            Some(flag) => format!(
                "it is compiled with the {} sanitizer but this host is not; add {flag} to the host's \
                 compile options (xplug hosts built with stable Rust have no sanitizer), \
                 or rebuild the plugin without {flag}",
                header.sanitizer.name().unwrap_or("unknown")
            ),
            None => format!(
                "it declares sanitizer {}, which this host does not know; \
                 rebuild the plugin without a sanitizer",
                header.sanitizer.0
            ),
        };
        return Err(incompatible(&plugin, StatusCode::UNAVAILABLE, reason));
    }
    let unknown = header.features.unknown();
    if !unknown.is_empty() {
        return Err(incompatible(
            &plugin,
            StatusCode::FAILED_PRECONDITION,
            format!(
                "it declares feature bits {:#x} this host does not understand; \
                 rebuild it against this runtime's plugin header",
                unknown.0
            ),
        ));
    }
    if !header.features.contains(site.required_features) {
        let missing = Features(site.required_features.0 & !header.features.0);
        return Err(incompatible(
            &plugin,
            StatusCode::FAILED_PRECONDITION,
            format!(
                "the {} loader requires the feature(s) {} but the plugin declares {:?}; \
                 build the plugin with them",
                site.loader,
                missing.names().collect::<Vec<_>>().join(", "),
                header.features
            ),
        ));
    }
    let Some(load) = table.load else {
        return Err(incompatible(
            &plugin,
            StatusCode::INVALID_ARGUMENT,
            "its v0 table has a NULL `load` function; fix the plugin's table".to_owned(),
        ));
    };
    let Some(resolve_fn) = table.resolve else {
        return Err(incompatible(
            &plugin,
            StatusCode::INVALID_ARGUMENT,
            "its v0 table has a NULL `resolve` function; fix the plugin's table".to_owned(),
        ));
    };

    // Step 4: load with an environment and params valid only for the call.
    let counters = HostAllocator::new();
    let environment = EnvironmentV0 { host_allocator: counters.abi() };
    let pairs = params.as_string_pairs();
    let pairs_ptr = if pairs.is_empty() { std::ptr::null() } else { pairs.as_ptr() };
    let mut state: *mut c_void = std::ptr::null_mut();
    // SAFETY: `load` is the plugin's non-null v0 load function; the
    // environment, the `pairs.len()` string pairs (borrowing `params`) and
    // `state` all outlive the call; the allocator's `self` (`counters`) is
    // kept alive by the plugin we build, or dropped only after a failed load.
    let status = unsafe { load(&environment, pairs.len(), pairs_ptr, &mut state) };
    drop(pairs);
    if !status.is_ok() {
        let held = counters.stats();
        if held.live_allocations != 0 {
            tracing::warn!(
                plugin = %plugin,
                leaked_allocations = held.live_allocations,
                leaked_bytes = held.live_bytes,
                "plugin {plugin} failed to load and kept {} allocation(s) of host memory",
                held.live_allocations
            );
        }
        // Never `unload` after a failed `load`: the plugin has no state to
        // release and may crash on a NULL one.
        return Err(Error::LoadFailed {
            plugin,
            code: status.code(),
            message: format!(
                "its load function refused the environment or the {} parameter(s); \
                 check the parameters the plugin expects",
                params.len()
            ),
        });
    }

    let provider_name = ProviderName::from(String::from(shown_name));
    let info = PluginInfo {
        name,
        description,
        version: header.version,
        features: header.features,
        sanitizer: header.sanitizer,
    };
    Ok(Plugin {
        provider_name,
        info,
        source: site.source,
        label: plugin,
        resolve_fn,
        unload_fn: table.unload,
        state,
        unloaded: false,
        counters,
        exports: None,
        _keep_alive: site.keep_alive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Table(
        #[expect(dead_code, reason = "read by the host through the pointer the query returns")] PluginV0,
    );
    // SAFETY: immutable table of thread-safe functions.
    unsafe impl Sync for Table {}

    static HEADER: Header = Header {
        version: Version::LATEST,
        name: std::ptr::null(),
        description: std::ptr::null(),
        features: Features::NONE,
        sanitizer: Sanitizer::NONE,
        reserved: [0; 8],
    };

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

    unsafe extern "C" fn query(_: Version, _: *mut c_void) -> *mut *const Header {
        (&raw const TABLE).cast_mut().cast()
    }

    fn site(required_features: Features) -> LoadSite {
        LoadSite {
            label: "test plugin".to_owned(),
            origin: " (unit test)".to_owned(),
            fallback_name: "nameless".to_owned(),
            source: PluginSource::Static,
            required_features,
            loader: "embedded ELF",
            keep_alive: None,
        }
    }

    #[test]
    fn loader_required_features_are_enforced() {
        // SAFETY: `query` returns the immutable, valid table above.
        let error = unsafe { load_v0(query, site(Features::STANDALONE), &LoadParams::new()) }.unwrap_err();
        assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
        let message = error.to_string();
        assert!(message.contains("embedded ELF loader requires the feature(s) standalone"), "{message}");
        assert!(message.contains("`nameless` (unit test)"), "{message}");
    }

    #[test]
    fn nameless_header_uses_the_fallback_name() {
        // SAFETY: as above.
        let plugin = unsafe { load_v0(query, site(Features::NONE), &LoadParams::new()) }.unwrap();
        assert_eq!(plugin.info().name, "");
        assert_eq!(plugin.info().description, "");
        assert_eq!(plugin.provider_name, "nameless");
        // No `unload` in the table: dropping is still fine.
        assert_eq!(plugin.unload(), AllocationStats::default());
    }
}
