//! The C functions of IREE's runtime this crate links (compiled by
//! `build.rs`), declared by hand from IREE's headers. Every type here has
//! IREE's C layout; the safe wrapper in the crate root is the only caller.
//!
//! `build.rs` gives every global symbol of this build the prefix
//! `xplug_ref_` (IREE's `iree_status_free` is `xplug_ref_iree_status_free`
//! here), so a binary can link this copy beside `xplug-iree`'s whole
//! runtime without two definitions of one symbol; each declaration names
//! its prefixed symbol.

use std::ffi::{c_char, c_void};

use xplug_abi::{Allocator, AllocatorCommand, QueryFn, Status, StringPair, StringView};

/// `iree_hal_executable_plugin_manager_t` (opaque).
#[repr(C)]
pub(crate) struct RawManager {
    _opaque: [u8; 0],
}

/// `iree_hal_executable_plugin_t` (opaque to us: we only pass it back).
#[repr(C)]
pub(crate) struct RawPlugin {
    _opaque: [u8; 0],
}

/// `iree_hal_executable_import_provider_resolve_fn_t`: the one declaration
/// xplug's C provider view already makes.
pub use xplug_manager::CResolveFn as ProviderResolveFn;

/// `iree_hal_executable_import_provider_t`: `{ void* self; resolve }`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawProvider {
    pub(crate) self_: *mut c_void,
    pub(crate) resolve: Option<ProviderResolveFn>,
}

unsafe extern "C" {
    /// IREE's libc allocator (`IREE_ALLOCATOR_SYSTEM_CTL` in our build).
    #[link_name = "xplug_ref_iree_allocator_libc_ctl"]
    pub(crate) fn iree_allocator_libc_ctl(
        self_: *mut c_void,
        command: AllocatorCommand,
        params: *const c_void,
        inout_ptr: *mut *mut c_void,
    ) -> Status;

    #[link_name = "xplug_ref_iree_allocator_free"]
    pub(crate) fn iree_allocator_free(allocator: Allocator, ptr: *mut c_void);

    /// Formats `status` into a NUL-terminated buffer from `allocator`.
    #[link_name = "xplug_ref_iree_status_to_string"]
    pub(crate) fn iree_status_to_string(
        status: Status,
        allocator: *const Allocator,
        out_buffer: *mut *mut c_char,
        out_buffer_length: *mut usize,
    ) -> bool;

    /// Frees a status's storage (a no-op for code-only statuses).
    #[link_name = "xplug_ref_iree_status_free"]
    pub(crate) fn iree_status_free(status: Status);

    #[link_name = "xplug_ref_iree_hal_executable_plugin_manager_create"]
    pub(crate) fn iree_hal_executable_plugin_manager_create(
        capacity: usize,
        host_allocator: Allocator,
        out_manager: *mut *mut RawManager,
    ) -> Status;

    #[link_name = "xplug_ref_iree_hal_executable_plugin_manager_release"]
    pub(crate) fn iree_hal_executable_plugin_manager_release(manager: *mut RawManager);

    #[link_name = "xplug_ref_iree_hal_executable_plugin_manager_register_provider"]
    pub(crate) fn iree_hal_executable_plugin_manager_register_provider(
        manager: *mut RawManager,
        provider: RawProvider,
    ) -> Status;

    #[link_name = "xplug_ref_iree_hal_executable_plugin_manager_register_plugin"]
    pub(crate) fn iree_hal_executable_plugin_manager_register_plugin(
        manager: *mut RawManager,
        plugin: *mut RawPlugin,
    ) -> Status;

    #[link_name = "xplug_ref_iree_hal_executable_plugin_manager_provider"]
    pub(crate) fn iree_hal_executable_plugin_manager_provider(manager: *mut RawManager) -> RawProvider;

    #[link_name = "xplug_ref_iree_hal_executable_plugin_release"]
    pub(crate) fn iree_hal_executable_plugin_release(plugin: *mut RawPlugin);

    #[link_name = "xplug_ref_iree_hal_executable_plugin_provider"]
    pub(crate) fn iree_hal_executable_plugin_provider(plugin: *mut RawPlugin) -> RawProvider;

    #[link_name = "xplug_ref_iree_hal_static_executable_plugin_create"]
    pub(crate) fn iree_hal_static_executable_plugin_create(
        query_fn: QueryFn,
        param_count: usize,
        params: *const StringPair,
        host_allocator: Allocator,
        out_plugin: *mut *mut RawPlugin,
    ) -> Status;

    #[link_name = "xplug_ref_iree_hal_system_library_executable_plugin_load_from_file"]
    pub(crate) fn iree_hal_system_library_executable_plugin_load_from_file(
        path: *const c_char,
        param_count: usize,
        params: *const StringPair,
        host_allocator: Allocator,
        out_plugin: *mut *mut RawPlugin,
    ) -> Status;

    #[link_name = "xplug_ref_iree_hal_embedded_elf_executable_plugin_load_from_file"]
    pub(crate) fn iree_hal_embedded_elf_executable_plugin_load_from_file(
        path: StringView,
        param_count: usize,
        params: *const StringPair,
        host_allocator: Allocator,
        out_plugin: *mut *mut RawPlugin,
    ) -> Status;
}

/// `iree_allocator_system()` in our build: the libc allocator.
pub(crate) fn system_allocator() -> Allocator {
    Allocator { self_: std::ptr::null_mut(), ctl: Some(iree_allocator_libc_ctl) }
}

/// Takes ownership of `status`: its code and, unless OK, its formatted
/// message; the status is freed.
///
/// # Safety
/// `status` came from IREE's code built by this crate (a code-only value or
/// a pointer to IREE's status storage) and is not used again.
pub(crate) unsafe fn consume_status(status: Status) -> (xplug_abi::StatusCode, Option<String>) {
    let code = status.code();
    if status.0 == 0 {
        return (code, None);
    }
    let allocator = system_allocator();
    let mut buffer: *mut c_char = std::ptr::null_mut();
    let mut length = 0usize;
    // SAFETY: `status` is a live IREE status (caller's promise); the
    // allocator and out-pointers are valid for the call.
    let formatted = unsafe { iree_status_to_string(status, &allocator, &mut buffer, &mut length) };
    let message = if formatted && !buffer.is_null() {
        // SAFETY: on success IREE wrote `length` bytes at `buffer`.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), length) };
        let text = String::from_utf8_lossy(bytes).into_owned();
        // SAFETY: `buffer` came from `allocator` and is freed once.
        unsafe { iree_allocator_free(allocator, buffer.cast()) };
        Some(text)
    } else {
        None
    };
    // SAFETY: the status is freed once and never used again.
    unsafe { iree_status_free(status) };
    (code, message)
}
