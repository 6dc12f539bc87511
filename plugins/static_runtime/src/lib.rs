//! `static_runtime`: a tiny runtime that loads plugins linked into its own
//! binary.
//!
//! The `static_runtime` binary names `sample_static` (`use sample_static as
//! _;`), lists [`xplug_providers::static_plugins()`], loads `sample_static`
//! through its registered query function and calls `static_fma_i64`.
//! The `unreferenced` binary depends on the same crate but never names it:
//! the linker drops the plugin's registration, and the list is empty. That
//! is the trap `xplug-sdk` documents.
//!
//! This library holds the host side both binaries share: a minimal v0 host
//! over a raw query function (what `xplug_providers::StaticPlugin` will do
//! once it lands).

use std::ffi::{CStr, c_char, c_void};
use std::ptr;

use xplug_abi::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EnvironmentV0, ImportFn, PluginV0, QueryFn,
    Resolution, ResolveParamsV0, Status, StatusCode, Version,
};

/// A plugin loaded through its query function; unloaded on drop.
pub struct LoadedPlugin {
    table: &'static PluginV0,
    state: *mut c_void,
}

/// The host allocator: C `malloc`/`free` (16-byte aligned on the targets
/// xplug supports).
unsafe extern "C" fn malloc_ctl(
    _self: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    match command {
        AllocatorCommand::MALLOC => {
            // SAFETY: MALLOC passes alloc params and a writable out pointer.
            let size = unsafe { (*params.cast::<AllocatorAllocParams>()).byte_length };
            // SAFETY: plain C allocation.
            let block = unsafe { libc::malloc(size.max(1)) };
            if block.is_null() {
                return Status::from_code(StatusCode::RESOURCE_EXHAUSTED);
            }
            // SAFETY: see above.
            unsafe { inout_ptr.write(block) };
            Status::OK
        }
        AllocatorCommand::FREE => {
            // SAFETY: FREE passes a block from MALLOC in `*inout_ptr`.
            unsafe { libc::free(inout_ptr.read()) };
            Status::OK
        }
        _ => Status::from_code(StatusCode::UNIMPLEMENTED),
    }
}

impl LoadedPlugin {
    /// Queries, checks and loads the plugin behind `query`.
    ///
    /// # Safety
    /// `query` must obey the v0 query contract (a registration made through
    /// `StaticPluginRegistration::new` promises exactly that).
    ///
    /// # Errors
    /// A message naming the failed step.
    pub unsafe fn load(name: &str, query: QueryFn) -> Result<Self, String> {
        // SAFETY: the caller vouches for `query`.
        let raw = unsafe { query(Version::LATEST, ptr::null_mut()) };
        if raw.is_null() {
            return Err(format!("plugin `{name}` needs a runtime newer than plugin ABI {}", Version::LATEST));
        }
        // SAFETY: a non-NULL v0 query result points at an immutable static table.
        let table = unsafe { &*raw.cast::<PluginV0>() };
        let load = table.load.ok_or_else(|| format!("plugin `{name}` has no load function"))?;
        let environment =
            EnvironmentV0 { host_allocator: Allocator { self_: ptr::null_mut(), ctl: Some(malloc_ctl) } };
        let mut state = ptr::null_mut();
        // SAFETY: environment and out pointer are valid for the call; no params.
        let status = unsafe { load(&environment, 0, ptr::null(), &mut state) };
        if !status.is_ok() {
            return Err(format!("plugin `{name}` failed to load: {}", status.code()));
        }
        Ok(Self { table, state })
    }

    /// The name in the plugin's header.
    #[must_use]
    pub fn header_name(&self) -> String {
        // SAFETY: the header and its name are static C data of the plugin.
        unsafe { CStr::from_ptr((*self.table.header).name) }.to_string_lossy().into_owned()
    }

    /// Resolves one required import: its function and context.
    ///
    /// # Errors
    /// A message with the status when the plugin does not provide it.
    pub fn resolve(&self, symbol: &CStr) -> Result<(ImportFn, *mut c_void), String> {
        let resolve = self.table.resolve.ok_or("plugin has no resolve function")?;
        let names: [*const c_char; 1] = [symbol.as_ptr()];
        let mut functions = [ptr::null_mut(); 1];
        let mut contexts = [ptr::null_mut(); 1];
        let params = ResolveParamsV0 {
            count: 1,
            symbol_names: names.as_ptr(),
            out_fn_ptrs: functions.as_mut_ptr(),
            out_fn_contexts: contexts.as_mut_ptr(),
        };
        let mut resolution = Resolution::NONE;
        // SAFETY: one name and two one-slot arrays, valid across the call.
        let status = unsafe { resolve(self.state, &params, &mut resolution) };
        if !status.is_ok() || functions[0].is_null() {
            return Err(format!("resolving `{}` failed: {}", symbol.to_string_lossy(), status.code()));
        }
        // SAFETY: a resolved slot holds an import function pointer.
        Ok((unsafe { std::mem::transmute::<*mut c_void, ImportFn>(functions[0]) }, contexts[0]))
    }
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        if let Some(unload) = self.table.unload {
            // SAFETY: `state` came from this table's successful load.
            unsafe { unload(self.state) };
        }
    }
}

/// The names of the statically registered plugins, sorted.
#[must_use]
pub fn static_plugin_names() -> Vec<&'static str> {
    xplug_providers::static_plugins().iter().map(|plugin| plugin.name()).collect()
}

/// Loads the registered plugin `name` and returns `a * b + c` computed by its
/// `static_fma_i64` import.
///
/// # Errors
/// When the plugin is not registered or any step fails.
pub fn fma_through_static_plugin(name: &str, a: i64, b: i64, c: i64) -> Result<i64, String> {
    let registration = xplug_providers::static_plugins()
        .into_iter()
        .find(|plugin| plugin.name() == name)
        .ok_or_else(|| format!("no static plugin named `{name}` is linked in; add `use {name} as _;`"))?;
    // SAFETY: registrations promise a v0-conforming query function.
    let plugin = unsafe { LoadedPlugin::load(name, registration.query())? };
    let (function, context) = plugin.resolve(c"static_fma_i64")?;
    // Same layout as `sample_static::FmaParams`, declared here as a host would.
    #[repr(C)]
    struct Fma {
        result: i64,
        a: i64,
        b: i64,
        c: i64,
    }
    let mut params = Fma { result: 0, a, b, c };
    // SAFETY: `static_fma_i64` takes exactly this struct.
    let code = unsafe { function(ptr::from_mut(&mut params).cast(), context, ptr::null_mut()) };
    if code != 0 {
        return Err(format!("static_fma_i64 failed with code {code}"));
    }
    Ok(params.result)
}
