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

use std::alloc::Layout;
use std::ffi::{CStr, c_char, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use dlopen2::raw::Library;
use xplug_abi::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EXPORT_NAME, EXPORTS_LIST_NAME, EnvironmentV0,
    ExportsListFn, Features, Header, PluginV0, QueryFn, Resolution, ResolveParamsV0, Sanitizer, Status,
    StatusCode, StringPair, StringView, Version,
};

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

/// Counts what a plugin holds from the host allocator.
///
/// Each block carries a 16-byte prefix storing its requested size, so FREE
/// and REALLOC can rebuild the layout.
#[derive(Debug, Default)]
pub(crate) struct CountingAllocator {
    live_blocks: AtomicUsize,
    live_bytes: AtomicUsize,
}

/// Alignment of every block and size of its prefix.
const BLOCK_ALIGN: usize = 16;

impl CountingAllocator {
    /// Blocks and bytes currently held.
    pub(crate) fn live(&self) -> (usize, usize) {
        (self.live_blocks.load(Ordering::Relaxed), self.live_bytes.load(Ordering::Relaxed))
    }

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(BLOCK_ALIGN)?, BLOCK_ALIGN).ok()
    }

    /// Allocates a block of `size` bytes (zeroed when `zeroed`).
    fn allocate(&self, size: usize, zeroed: bool) -> *mut c_void {
        let Some(layout) = Self::layout(size) else { return std::ptr::null_mut() };
        // SAFETY: the layout has a non-zero size (prefix included).
        let base =
            unsafe { if zeroed { std::alloc::alloc_zeroed(layout) } else { std::alloc::alloc(layout) } };
        if base.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: the block is at least BLOCK_ALIGN bytes and 16-aligned.
        unsafe { base.cast::<usize>().write(size) };
        self.live_blocks.fetch_add(1, Ordering::Relaxed);
        self.live_bytes.fetch_add(size, Ordering::Relaxed);
        // SAFETY: still inside the block (the user part starts after the prefix).
        unsafe { base.add(BLOCK_ALIGN) }.cast()
    }

    /// Frees a block from `allocate`.
    ///
    /// # Safety
    /// `ptr` came from this allocator and is not freed yet.
    unsafe fn free(&self, ptr: *mut c_void) {
        // SAFETY: the prefix sits BLOCK_ALIGN bytes before the user pointer.
        let base = unsafe { ptr.cast::<u8>().sub(BLOCK_ALIGN) };
        // SAFETY: written by `allocate`.
        let size = unsafe { base.cast::<usize>().read() };
        self.live_blocks.fetch_sub(1, Ordering::Relaxed);
        self.live_bytes.fetch_sub(size, Ordering::Relaxed);
        if let Some(layout) = Self::layout(size) {
            // SAFETY: same base and layout as the allocation.
            unsafe { std::alloc::dealloc(base, layout) };
        }
    }

    /// The ABI value plugins receive; `self` must outlive every use.
    fn as_abi(&self) -> Allocator {
        Allocator { self_: std::ptr::from_ref(self).cast_mut().cast(), ctl: Some(counting_ctl) }
    }
}

/// The allocator's `ctl`, called by plugins.
///
/// # Safety
/// `allocator_self` is a live [`CountingAllocator`]; the other arguments
/// follow the v0 allocator contract for `command`.
unsafe extern "C" fn counting_ctl(
    allocator_self: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if allocator_self.is_null() || inout_ptr.is_null() {
            return StatusCode::INVALID_ARGUMENT;
        }
        // SAFETY: `self_` is the CountingAllocator the host gave (contract).
        let allocator = unsafe { &*allocator_self.cast::<CountingAllocator>() };
        let size = || {
            if params.is_null() {
                None
            } else {
                // SAFETY: MALLOC/CALLOC/REALLOC pass alloc params (contract).
                Some(unsafe { (*params.cast::<AllocatorAllocParams>()).byte_length })
            }
        };
        match command {
            AllocatorCommand::MALLOC | AllocatorCommand::CALLOC => {
                let Some(size) = size() else { return StatusCode::INVALID_ARGUMENT };
                let block = allocator.allocate(size, command == AllocatorCommand::CALLOC);
                if block.is_null() {
                    return StatusCode::RESOURCE_EXHAUSTED;
                }
                // SAFETY: `inout_ptr` is writable (contract).
                unsafe { inout_ptr.write(block) };
                StatusCode::OK
            }
            AllocatorCommand::REALLOC => {
                let Some(size) = size() else { return StatusCode::INVALID_ARGUMENT };
                // SAFETY: readable (contract).
                let old = unsafe { inout_ptr.read() };
                let block = allocator.allocate(size, false);
                if block.is_null() {
                    return StatusCode::RESOURCE_EXHAUSTED;
                }
                if !old.is_null() {
                    // SAFETY: `old` is a live block of this allocator; copy
                    // the smaller of the two sizes, then free it.
                    unsafe {
                        let old_size = old.cast::<u8>().sub(BLOCK_ALIGN).cast::<usize>().read();
                        std::ptr::copy_nonoverlapping(
                            old.cast::<u8>(),
                            block.cast::<u8>(),
                            old_size.min(size),
                        );
                        allocator.free(old);
                    }
                }
                // SAFETY: writable (contract).
                unsafe { inout_ptr.write(block) };
                StatusCode::OK
            }
            AllocatorCommand::FREE => {
                // SAFETY: readable (contract).
                let block = unsafe { inout_ptr.read() };
                if !block.is_null() {
                    // SAFETY: a live block of this allocator (contract).
                    unsafe { allocator.free(block) };
                }
                StatusCode::OK
            }
            _ => StatusCode::UNIMPLEMENTED,
        }
    }));
    Status::from_code(result.unwrap_or(StatusCode::INTERNAL))
}

/// A plugin instance loaded by hand: its `load` succeeded and `unload` runs
/// exactly once (in [`RawInstance::unload`] or on drop).
pub(crate) struct RawInstance<'lib> {
    table: PluginV0,
    state: *mut c_void,
    allocator: Box<CountingAllocator>,
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
        let allocator = Box::<CountingAllocator>::default();
        let environment = EnvironmentV0 { host_allocator: allocator.as_abi() };
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
        // the allocator lives in a box this instance keeps until after unload.
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
        self.allocator.live()
    }

    /// Calls `unload` and returns the blocks and bytes still held after it.
    pub(crate) fn unload(mut self) -> (usize, usize) {
        self.shutdown();
        self.allocator.live()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl(
        allocator: &CountingAllocator,
        command: AllocatorCommand,
        size: Option<usize>,
        ptr: &mut *mut c_void,
    ) -> StatusCode {
        let params = size.map(|byte_length| AllocatorAllocParams { byte_length });
        let params_ptr = params.as_ref().map_or(std::ptr::null(), |p| std::ptr::from_ref(p).cast::<c_void>());
        let abi = allocator.as_abi();
        // SAFETY: `abi.self_` is `allocator`, alive for the call; params and
        // pointer follow the allocator contract for each command used here.
        unsafe { (abi.ctl.expect("set"))(abi.self_, command, params_ptr, ptr) }.code()
    }

    #[test]
    fn counting_allocator_tracks_malloc_calloc_realloc_free() {
        let allocator = CountingAllocator::default();
        let mut a = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, AllocatorCommand::MALLOC, Some(10), &mut a), StatusCode::OK);
        assert_eq!(a as usize % BLOCK_ALIGN, 0);
        // SAFETY: `a` is a fresh 10-byte block.
        unsafe { std::ptr::copy_nonoverlapping(b"0123456789".as_ptr(), a.cast::<u8>(), 10) };
        let mut b = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, AllocatorCommand::CALLOC, Some(32), &mut b), StatusCode::OK);
        // SAFETY: `b` is a fresh 32-byte block.
        assert!(unsafe { std::slice::from_raw_parts(b.cast::<u8>(), 32) }.iter().all(|&byte| byte == 0));
        assert_eq!(allocator.live(), (2, 42));

        assert_eq!(ctl(&allocator, AllocatorCommand::REALLOC, Some(100), &mut a), StatusCode::OK);
        // SAFETY: the grown block keeps the first 10 bytes.
        assert_eq!(unsafe { std::slice::from_raw_parts(a.cast::<u8>(), 10) }, b"0123456789");
        assert_eq!(allocator.live(), (2, 132));

        assert_eq!(ctl(&allocator, AllocatorCommand::FREE, None, &mut a), StatusCode::OK);
        assert_eq!(ctl(&allocator, AllocatorCommand::FREE, None, &mut b), StatusCode::OK);
        assert_eq!(allocator.live(), (0, 0));

        let mut c = std::ptr::null_mut();
        assert_eq!(ctl(&allocator, AllocatorCommand::MALLOC, None, &mut c), StatusCode::INVALID_ARGUMENT);
        assert_eq!(ctl(&allocator, AllocatorCommand(99), Some(1), &mut c), StatusCode::UNIMPLEMENTED);
        assert_eq!(allocator.live(), (0, 0));
    }
}
