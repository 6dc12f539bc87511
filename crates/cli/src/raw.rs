//! The FFI edge of the CLI: a bare v0 host over a shared library.
//!
//! `xplug check` must see exactly what a plugin answers (a status a C host
//! would get, not the loader's judgement of it), and `xplug inspect` reads the
//! optional `xplug_plugin_exports` export. Both need the raw library, its
//! query function and the plugin's table, which this module wraps. All
//! `unsafe` of the CLI that is not a single trusted load lives here.
//!
//! Trust is placed once, at [`RawLibrary::open`]: the caller promises the
//! file is a v0 plugin, and every later call into it (query, load, resolve,
//! unload, the exports list) relies on that promise.

use std::ffi::{CStr, c_char, c_void};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dlopen2::raw::Library;
use xplug_abi::{
    EXPORT_NAME, EXPORTS_LIST_NAME, EnvironmentV0, ExportsListFn, Features, Header, PluginV0, QueryFn,
    Resolution, ResolveParamsV0, Sanitizer, StatusCode, StringPair, StringView, Version,
};

use xplug_providers::HostAllocator;

use crate::error::CliError;

/// What a plugin's header says, copied out of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderInfo {
    /// `version` field.
    pub(crate) version: Version,
    /// `name` (None for a NULL pointer).
    pub(crate) name: Option<String>,
    /// `description` (None for a NULL pointer).
    pub(crate) description: Option<String>,
    /// `features` bits.
    pub(crate) features: Features,
    /// `sanitizer` value (any i32).
    pub(crate) sanitizer: Sanitizer,
}

/// A plugin library opened by the OS loader, with its query export.
pub(crate) struct RawLibrary {
    library: Library,
    query: QueryFn,
    path: PathBuf,
}

impl std::fmt::Debug for RawLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawLibrary").field("path", &self.path).finish_non_exhaustive()
    }
}

impl RawLibrary {
    /// Opens the library at `path` and finds its query export.
    ///
    /// # Errors
    /// [`CliError::PluginFileNotFound`] when nothing is at `path`,
    /// [`CliError::LibraryOpen`] when the OS loader refuses the file,
    /// [`CliError::MissingExport`] when the query export is absent.
    ///
    /// # Safety
    /// Opening runs the library's initialisers, and every method of the
    /// returned value calls into the plugin: the file must be a v0 plugin
    /// whose query export, table, functions and `xplug_plugin_exports` (if
    /// present) obey the v0 ABI and the SDK's documented signature.
    ///
    /// # Thread-safety
    /// Any thread. The OS loader maps a file once per process; a library
    /// opened here and by a loader of `xplug-providers` shares its globals.
    ///
    /// # Platform-specific behaviour
    /// `dlopen(RTLD_LAZY | RTLD_LOCAL)` on Unix, `LoadLibraryW` on Windows; a
    /// relative path is taken relative to the current directory.
    pub(crate) unsafe fn open(path: &Path) -> Result<Self, CliError> {
        if !path.exists() {
            return Err(CliError::PluginFileNotFound { path: path.to_path_buf() });
        }
        let open_path = if path.is_relative() { Path::new(".").join(path) } else { path.to_path_buf() };
        let library = Library::open(&open_path)
            .map_err(|error| CliError::LibraryOpen { path: path.to_path_buf(), cause: error.to_string() })?;
        // SAFETY: `QueryFn` is a function pointer type, and the export has
        // that signature by the caller's promise.
        let query =
            unsafe { library.symbol_cstr::<QueryFn>(EXPORT_NAME) }.map_err(|_| CliError::MissingExport {
                path: path.to_path_buf(),
                symbol: EXPORT_NAME.to_string_lossy().into_owned(),
            })?;
        Ok(Self { library, query, path: path.to_path_buf() })
    }

    /// Calls `query(max_version, NULL)` and copies the v0 table it returns;
    /// `None` when the plugin returns NULL.
    pub(crate) fn query(&self, max_version: Version) -> Option<PluginV0> {
        // SAFETY: the query export obeys the v0 contract (promise made at `open`).
        let table = unsafe { (self.query)(max_version, std::ptr::null_mut()) };
        if table.is_null() {
            return None;
        }
        // SAFETY: a non-NULL result points to the plugin's v0 table, which
        // stays valid while the library is open; we copy it.
        Some(unsafe { table.cast::<PluginV0>().read() })
    }

    /// Reads the header `table` points to; `None` for a NULL header pointer.
    pub(crate) fn header(&self, table: &PluginV0) -> Option<HeaderInfo> {
        if table.header.is_null() {
            return None;
        }
        // SAFETY: non-NULL header pointer into the plugin's immutable data
        // (v0 contract, promised at `open`).
        let header: Header = unsafe { table.header.read() };
        // SAFETY: header strings are NULL or NUL-terminated (v0 contract).
        let (name, description) = unsafe { (c_string(header.name), c_string(header.description)) };
        Some(HeaderInfo {
            version: header.version,
            name,
            description,
            features: header.features,
            sanitizer: header.sanitizer,
        })
    }

    /// The names from `xplug_plugin_exports`, or `None` when the library does
    /// not export it (C plugins, IREE's samples).
    pub(crate) fn exports(&self) -> Option<Vec<String>> {
        // SAFETY: the SDK documents the export's signature as `xplug_abi::ExportsListFn`
        // (promise made at `open`).
        let exports = unsafe { self.library.symbol_cstr::<ExportsListFn>(EXPORTS_LIST_NAME) }.ok()?;
        let mut count = 0usize;
        // SAFETY: `count` is a valid out-pointer; the function returns a
        // static array of `count` C strings (SDK contract).
        let names = unsafe { exports(&mut count) };
        if names.is_null() {
            return Some(Vec::new());
        }
        // SAFETY: as above: `count` valid pointers to static C strings.
        let names = unsafe { std::slice::from_raw_parts(names, count) };
        // SAFETY: each entry is NULL or a NUL-terminated static string.
        Some(names.iter().filter_map(|&name| unsafe { c_string(name) }).collect())
    }
}

/// A copy of a C string, lossily decoded; `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or a valid NUL-terminated string.
unsafe fn c_string(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated (caller's contract).
    Some(unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

/// A plugin instance loaded by hand: its `load` succeeded and `unload` runs
/// exactly once (in [`RawInstance::unload`] or on drop).
pub(crate) struct RawInstance<'lib> {
    table: PluginV0,
    state: *mut c_void,
    allocator: Arc<HostAllocator>,
    unloaded: bool,
    _library: PhantomData<&'lib RawLibrary>,
}

impl<'lib> RawInstance<'lib> {
    /// Calls the table's `load` with a counting host allocator and `params`.
    ///
    /// # Errors
    /// The status code `load` returned, or `INVALID_ARGUMENT` when the table
    /// has no `load`.
    pub(crate) fn load(
        _library: &'lib RawLibrary,
        table: PluginV0,
        params: &[(&str, &str)],
    ) -> Result<Self, StatusCode> {
        let load = table.load.ok_or(StatusCode::INVALID_ARGUMENT)?;
        let allocator = HostAllocator::new();
        let environment = EnvironmentV0 { host_allocator: allocator.abi() };
        let pairs: Vec<StringPair> = params
            .iter()
            .map(|(key, value)| StringPair {
                key: StringView::from_bytes(key.as_bytes()),
                value: StringView::from_bytes(value.as_bytes()),
            })
            .collect();
        let mut state = std::ptr::null_mut();
        // SAFETY: `table` came from the library's query (trusted at `open`);
        // the environment, params and out-pointer are valid for the call, and
        // the allocator lives in an `Arc` this instance keeps until after unload.
        let status = unsafe { load(&environment, pairs.len(), pairs.as_ptr(), &mut state) };
        if !status.is_ok() {
            return Err(status.code());
        }
        Ok(Self { table, state, allocator, unloaded: false, _library: PhantomData })
    }

    /// Calls `resolve` with `names` and the two slot arrays (same length);
    /// returns the status code and the resolution bits.
    pub(crate) fn resolve(
        &self,
        names: &[*const c_char],
        fns: &mut [*mut c_void],
        contexts: &mut [*mut c_void],
    ) -> (StatusCode, Resolution) {
        assert!(names.len() == fns.len() && names.len() == contexts.len(), "slot arrays differ in length");
        let Some(resolve) = self.table.resolve else {
            return (StatusCode::INVALID_ARGUMENT, Resolution::NONE);
        };
        let params = ResolveParamsV0 {
            count: names.len(),
            symbol_names: names.as_ptr(),
            out_fn_ptrs: fns.as_mut_ptr(),
            out_fn_contexts: contexts.as_mut_ptr(),
        };
        let mut resolution = Resolution::NONE;
        // SAFETY: `state` is from this instance's successful `load`; the
        // three arrays hold `count` elements and outlive the call; callers
        // pass valid NUL-terminated names.
        let status = unsafe { resolve(self.state, &params, &mut resolution) };
        (status.code(), resolution)
    }

    /// Blocks and bytes the plugin holds right now.
    pub(crate) fn live(&self) -> (usize, usize) {
        let stats = self.allocator.stats();
        (stats.live_allocations, stats.live_bytes)
    }

    /// Calls `unload` and returns the blocks and bytes still held after it.
    pub(crate) fn unload(mut self) -> (usize, usize) {
        self.shutdown();
        self.live()
    }

    fn shutdown(&mut self) {
        if std::mem::replace(&mut self.unloaded, true) {
            return;
        }
        if let Some(unload) = self.table.unload {
            // SAFETY: `state` is from the successful `load`; called once.
            unsafe { unload(self.state) };
        }
    }
}

impl Drop for RawInstance<'_> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Calls an import function as an executable does: `fn(params, context, NULL)`.
///
/// # Safety
/// `function` is an import function a provider resolved (non-NULL), its code
/// is still loaded, and `params` points to the parameter struct it expects.
pub(crate) unsafe fn call_import(function: *mut c_void, params: *mut c_void, context: *mut c_void) -> i32 {
    // SAFETY: a resolved slot holds an `ImportFn` (v0 ABI); function and
    // data pointers have the same size on supported targets.
    let function = unsafe { std::mem::transmute::<*mut c_void, xplug_abi::ImportFn>(function) };
    // SAFETY: caller's contract.
    unsafe { function(params, context, std::ptr::null_mut()) }
}
