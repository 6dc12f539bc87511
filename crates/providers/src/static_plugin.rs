//! Plugins linked into the binary.

use xplug_abi::{Features, QueryFn};

use crate::plugin::{LoadSite, load_v0};
use crate::{Error, LoadParams, Plugin, PluginSource, StaticPluginRegistration};

/// Loader for plugins whose query function is linked into the binary.
///
/// ```
/// use std::ffi::{c_void, CStr};
/// use xplug_providers::abi::{
///     EnvironmentV0, Features, Header, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status,
///     StringPair, Version,
/// };
/// use xplug_providers::{ImportProvider, LoadParams, StaticPlugin};
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
/// let plugin = unsafe { StaticPlugin::from_query(query, &LoadParams::new()) }?;
/// assert_eq!(plugin.name(), "doc_static");
/// assert_eq!(plugin.info().description, "a plugin that resolves nothing");
/// assert_eq!(plugin.unload().live_allocations, 0);
/// # Ok::<(), xplug_providers::Error>(())
/// ```
#[derive(Debug)]
pub struct StaticPlugin;

impl StaticPlugin {
    /// Loads the plugin behind a query function: runs the load checks of
    /// `docs/loading.md#load-checks` (version, header, features, sanitizer,
    /// table), then the plugin's `load` with `params`.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] when `query` returns NULL,
    /// [`Error::Incompatible`] when a header or table check fails,
    /// [`Error::LoadFailed`] when the plugin's `load` fails (its `unload` is
    /// then not called).
    ///
    /// # Safety
    /// `query` must implement the v0 query contract (`docs/abi.md#query`):
    /// return NULL
    /// or a pointer to a v0 table that stays valid and unchanged for the
    /// rest of the program, with NUL-terminated header strings and functions
    /// that obey the v0 ABI (callable from any thread).
    ///
    /// # Thread-safety
    /// May be called from any thread; loading the same query function twice
    /// yields two independent instances sharing the plugin's code and
    /// globals, so the plugin's `load` must tolerate that.
    ///
    /// # Platform-specific behaviour
    /// None: no OS loader is involved.
    pub unsafe fn from_query(query: QueryFn, params: &LoadParams) -> Result<Plugin, Error> {
        let site = LoadSite {
            label: "static plugin".to_owned(),
            origin: String::new(),
            fallback_name: "static plugin".to_owned(),
            source: PluginSource::Static,
            required_features: Features::NONE,
            loader: "static",
            keep_alive: None,
        };
        // SAFETY: forwarded to the caller; static code is never unmapped.
        unsafe { load_v0(query, site, params) }
    }

    /// Loads a plugin registered with [`StaticPluginRegistration`] (see
    /// [`crate::static_plugins`]).
    ///
    /// # Errors
    /// As [`Self::from_query`]; messages name the registration.
    pub fn from_registration(
        registration: &'static StaticPluginRegistration,
        params: &LoadParams,
    ) -> Result<Plugin, Error> {
        let site = LoadSite {
            label: format!("static plugin `{}`", registration.name()),
            origin: String::new(),
            fallback_name: registration.name().to_owned(),
            source: PluginSource::Static,
            required_features: Features::NONE,
            loader: "static",
            keep_alive: None,
        };
        // SAFETY: `StaticPluginRegistration::new` (unsafe) made its caller
        // promise that the query function follows the v0 contract for the
        // life of the program.
        unsafe { load_v0(registration.query(), site, params) }
    }
}
