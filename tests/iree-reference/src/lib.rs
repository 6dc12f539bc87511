//! IREE's own executable plugin manager and plugin loaders, compiled from the
//! IREE sources bundled in the `eerie-sys` crate, behind a small Rust API.
//!
//! This is xplug's **anchor**: the benchmarks time xplug's `Manager` against
//! [`IreeManager`] over the same loaded plugins, and the differential tests
//! resolve the same requests through both and compare slots and statuses.
//! The C code is IREE's, unchanged, built with `-O2 -DIREE_STATUS_MODE=2
//! -DIREE_FILE_IO_ENABLE=1` and IREE's libc allocator (see `build.rs`).
//!
//! ```
//! use std::ffi::c_void;
//! use xplug_abi::{Resolution, StatusCode};
//! use xplug_iree_reference::IreeManager;
//! use xplug_manager::providers::SymbolName;
//!
//! let manager = IreeManager::new(4).unwrap();
//! // No providers: an optional name is "missing", and IREE reports it as a
//! // NOT_FOUND for 0 required imports (a documented divergence from xplug).
//! let names = [SymbolName::new(c"?maybe")];
//! let mut fns = [std::ptr::null_mut::<c_void>()];
//! let mut contexts = [std::ptr::null_mut::<c_void>()];
//! let outcome = manager.resolve(&names, &mut fns, &mut contexts).unwrap();
//! assert_eq!(outcome.code, StatusCode::NOT_FOUND);
//! assert!(outcome.message.unwrap().contains("missing 0 required executable imports"));
//! ```
//!
//! Linux only (the build uses IREE's POSIX dynamic-library loader).

use std::ffi::{CString, c_char, c_void};
use std::path::Path;
use std::sync::Arc;

use xplug_abi::{QueryFn, Resolution, StatusCode, StringPair, StringView};
use xplug_manager::providers::SymbolName;

pub mod fixtures;
mod sys;

/// IREE's `iree_hal_executable_import_provider_resolve_fn_t`.
pub use sys::ProviderResolveFn;

// The crate exists for its C code; keep the dependency that carries the
// sources visible to `cargo` (and to unused-dependency lints).
use eerie_sys as _;

/// What can go wrong driving IREE's code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// IREE refused to create a manager.
    #[error("IREE could not create a plugin manager of capacity {capacity}: {code}: {message}")]
    CreateManager {
        /// The capacity asked for.
        capacity: usize,
        /// IREE's status code.
        code: StatusCode,
        /// IREE's status message.
        message: String,
    },
    /// IREE failed to load a plugin.
    #[error("IREE's {loader} loader failed to load {plugin}: {code}: {message}")]
    LoadPlugin {
        /// Which loader (`system library`, `static`, `embedded ELF`).
        loader: &'static str,
        /// The plugin (its path, or "static query function").
        plugin: String,
        /// IREE's status code.
        code: StatusCode,
        /// IREE's status message.
        message: String,
    },
    /// IREE refused a registration (e.g. the manager's capacity is reached).
    #[error("IREE's manager refused to register {what}: {code}: {message}")]
    Register {
        /// What was registered.
        what: String,
        /// IREE's status code.
        code: StatusCode,
        /// IREE's status message.
        message: String,
    },
    /// The arguments cannot be passed to C as given.
    #[error("invalid argument for IREE's C API: {reason}")]
    InvalidArgument {
        /// Why, and what to do.
        reason: String,
    },
}

/// The answer of an IREE resolve: its status code, the resolution bits it
/// reported, and (for a failure) IREE's formatted status message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOutcome {
    /// The status code IREE returned.
    pub code: StatusCode,
    /// The resolution bits IREE wrote (0 when it did not write them).
    pub resolution: Resolution,
    /// IREE's status message when `code` is not OK.
    pub message: Option<String>,
}

/// Load-time parameters (`key=value` pairs) for IREE's loaders.
fn string_pairs(params: &[(&[u8], &[u8])]) -> Vec<StringPair> {
    params
        .iter()
        .map(|(key, value)| StringPair {
            key: StringView::from_bytes(key),
            value: StringView::from_bytes(value),
        })
        .collect()
}

fn pairs_ptr(pairs: &[StringPair]) -> *const StringPair {
    if pairs.is_empty() { std::ptr::null() } else { pairs.as_ptr() }
}

/// A plugin loaded by one of IREE's loaders (`iree_hal_executable_plugin_t`),
/// holding one reference; released on drop.
#[derive(Debug)]
pub struct IreePlugin {
    raw: *mut sys::RawPlugin,
    provider: sys::RawProvider,
}

// SAFETY: IREE's plugins are reference counted atomically and their resolve
// is called from any thread by IREE's manager; the v0 contract makes plugin
// resolvers thread-safe.
unsafe impl Send for IreePlugin {}
// SAFETY: as above; `&IreePlugin` only resolves, which is thread-safe.
unsafe impl Sync for IreePlugin {}

/// Turns a load's status and out-pointer into a plugin or an error.
///
/// # Safety
/// `status` and `raw` are what one of IREE's plugin constructors just
/// returned.
unsafe fn finish_load(
    status: xplug_abi::Status,
    raw: *mut sys::RawPlugin,
    loader: &'static str,
    plugin: String,
) -> Result<IreePlugin, Error> {
    // SAFETY: a fresh status from IREE, consumed once.
    let (code, message) = unsafe { sys::consume_status(status) };
    if !code.is_ok() || raw.is_null() {
        if !raw.is_null() {
            // SAFETY: a plugin IREE handed out even though it failed; we
            // hold its only reference.
            unsafe { sys::iree_hal_executable_plugin_release(raw) };
        }
        return Err(Error::LoadPlugin { loader, plugin, code, message: message.unwrap_or_default() });
    }
    // SAFETY: `raw` is a live plugin we hold a reference to.
    let provider = unsafe { sys::iree_hal_executable_plugin_provider(raw) };
    Ok(IreePlugin { raw, provider })
}

impl IreePlugin {
    /// Loads a shared-library plugin with IREE's system-library loader
    /// (`dlopen`, then IREE's own checks and the plugin's `load`).
    ///
    /// # Errors
    /// [`Error::LoadPlugin`] with IREE's status when loading fails,
    /// [`Error::InvalidArgument`] for a path that is not UTF-8 or holds NUL.
    ///
    /// # Safety
    /// Opening the library runs its initialisers and IREE then calls its v0
    /// functions: it must be a well-formed v0 plugin sound to load here.
    pub unsafe fn system_library(path: &Path, params: &[(&[u8], &[u8])]) -> Result<Self, Error> {
        let text = path.to_str().ok_or_else(|| Error::InvalidArgument {
            reason: format!("plugin path {} is not UTF-8", path.display()),
        })?;
        let c_path = CString::new(text).map_err(|_| Error::InvalidArgument {
            reason: format!("plugin path {text:?} contains a NUL byte"),
        })?;
        let pairs = string_pairs(params);
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and `pairs.len()` pairs valid for
        // the call; IREE copies what it keeps. The library's soundness is
        // the caller's promise.
        let status = unsafe {
            sys::iree_hal_system_library_executable_plugin_load_from_file(
                c_path.as_ptr(),
                pairs.len(),
                pairs_ptr(&pairs),
                sys::system_allocator(),
                &mut raw,
            )
        };
        // SAFETY: straight from the constructor.
        unsafe { finish_load(status, raw, "system library", text.to_owned()) }
    }

    /// Creates a static plugin from its query function with IREE's static
    /// plugin loader.
    ///
    /// # Errors
    /// [`Error::LoadPlugin`] with IREE's status when loading fails.
    ///
    /// # Safety
    /// `query` implements the v0 query contract and the table it returns
    /// stays valid for the plugin's life.
    pub unsafe fn from_query(query: QueryFn, params: &[(&[u8], &[u8])]) -> Result<Self, Error> {
        let pairs = string_pairs(params);
        let mut raw = std::ptr::null_mut();
        // SAFETY: `query` obeys the v0 contract (caller's promise); the pairs
        // are valid for the call.
        let status = unsafe {
            sys::iree_hal_static_executable_plugin_create(
                query,
                pairs.len(),
                pairs_ptr(&pairs),
                sys::system_allocator(),
                &mut raw,
            )
        };
        // SAFETY: straight from the constructor.
        unsafe { finish_load(status, raw, "static", "a static query function".to_owned()) }
    }

    /// Loads a portable standalone ELF (`.sos`) plugin with IREE's embedded
    /// ELF loader (IREE maps and relocates it itself, without `dlopen`).
    ///
    /// # Errors
    /// [`Error::LoadPlugin`] with IREE's status when loading fails (not an
    /// ELF, wrong architecture, not standalone, ...), and
    /// [`Error::InvalidArgument`] for a path that is not UTF-8.
    ///
    /// # Safety
    /// IREE executes the file's code: it must be a well-formed embedded v0
    /// plugin sound to run in this process.
    pub unsafe fn embedded_elf(path: &Path, params: &[(&[u8], &[u8])]) -> Result<Self, Error> {
        let text = path.to_str().ok_or_else(|| Error::InvalidArgument {
            reason: format!("plugin path {} is not UTF-8", path.display()),
        })?;
        let pairs = string_pairs(params);
        let mut raw = std::ptr::null_mut();
        // SAFETY: the path view and pairs are valid for the call (IREE reads
        // the file during it); the plugin's soundness is the caller's promise.
        let status = unsafe {
            sys::iree_hal_embedded_elf_executable_plugin_load_from_file(
                StringView::from_bytes(text.as_bytes()),
                pairs.len(),
                pairs_ptr(&pairs),
                sys::system_allocator(),
                &mut raw,
            )
        };
        // SAFETY: straight from the constructor.
        unsafe { finish_load(status, raw, "embedded ELF", text.to_owned()) }
    }

    /// Loads the plugin file at `path` with the loader IREE picks for it:
    /// the embedded-ELF one for what xplug's embedded-ELF loader claims
    /// (`.sos`, `docs/src/reference/specs.md#loader-selection`), else the system-library
    /// one, as `iree-run-module --executable_plugin` does.
    ///
    /// # Errors
    /// As [`IreePlugin::embedded_elf`] or [`IreePlugin::system_library`].
    ///
    /// # Safety
    /// As those: the file's code runs in this process.
    pub unsafe fn from_file(path: &Path, params: &[(&[u8], &[u8])]) -> Result<Self, Error> {
        use xplug_manager::providers::Loader as _;
        if xplug_manager::providers::EMBEDDED_ELF.claim(&path.to_string_lossy()).is_some() {
            // SAFETY: forwarded to the caller.
            unsafe { Self::embedded_elf(path, params) }
        } else {
            // SAFETY: forwarded to the caller.
            unsafe { Self::system_library(path, params) }
        }
    }

    /// Resolves `names` through this plugin alone, as IREE's manager asks
    /// one provider (slots already filled are the plugin's to skip).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the three slices differ in length.
    pub fn resolve(
        &self,
        names: &[SymbolName<'_>],
        fns: &mut [*mut c_void],
        contexts: &mut [*mut c_void],
    ) -> Result<ResolveOutcome, Error> {
        resolve_with(self.provider, names, fns, contexts)
    }
}

impl Drop for IreePlugin {
    fn drop(&mut self) {
        // SAFETY: we hold one reference, released once.
        unsafe { sys::iree_hal_executable_plugin_release(self.raw) };
    }
}

/// Calls an IREE provider's resolve after checking the slice lengths.
fn resolve_with(
    provider: sys::RawProvider,
    names: &[SymbolName<'_>],
    fns: &mut [*mut c_void],
    contexts: &mut [*mut c_void],
) -> Result<ResolveOutcome, Error> {
    if names.len() != fns.len() || names.len() != contexts.len() {
        return Err(Error::InvalidArgument {
            reason: format!(
                "{} names but {} function slots and {} context slots; pass equal lengths",
                names.len(),
                fns.len(),
                contexts.len()
            ),
        });
    }
    let Some(resolve) = provider.resolve else {
        return Err(Error::InvalidArgument {
            reason: "the IREE provider has no resolve function".to_owned(),
        });
    };
    let mut resolution = Resolution::NONE;
    // SAFETY: three arrays of `names.len()` elements, borrowed for the call;
    // `SymbolName` is a transparent non-NULL pointer to a NUL-terminated
    // string, so the names are a C `const char* const*` array; `provider` is
    // a live IREE provider.
    let status = unsafe {
        resolve(
            provider.self_,
            names.len(),
            names.as_ptr().cast::<*const c_char>(),
            fns.as_mut_ptr(),
            contexts.as_mut_ptr(),
            &mut resolution,
        )
    };
    // SAFETY: a fresh status from IREE, consumed once.
    let (code, message) = unsafe { sys::consume_status(status) };
    Ok(ResolveOutcome { code, resolution, message })
}

/// An IREE import provider as C sees it: `self` and the resolve function.
#[derive(Clone, Copy, Debug)]
pub struct RawProvider {
    /// The provider's `self` argument.
    pub self_: *mut c_void,
    /// The resolve function.
    pub resolve: ProviderResolveFn,
}

/// IREE's executable plugin manager (`iree_hal_executable_plugin_manager_t`).
///
/// Plugins registered with [`IreeManager::register_plugin`] are retained by
/// IREE's manager; xplug managers registered as providers are kept alive by
/// this wrapper until it drops.
pub struct IreeManager {
    raw: *mut sys::RawManager,
    provider: sys::RawProvider,
    /// xplug managers registered as providers, kept alive for IREE.
    xplug_providers: Vec<Arc<xplug_manager::Manager>>,
}

impl std::fmt::Debug for IreeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IreeManager").field("raw", &self.raw).finish_non_exhaustive()
    }
}

// SAFETY: IREE's manager is documented thread-safe: registration takes its
// mutex and resolution reads an atomically published provider count.
unsafe impl Send for IreeManager {}
// SAFETY: as above.
unsafe impl Sync for IreeManager {}

impl IreeManager {
    /// A manager with room for `capacity` providers.
    ///
    /// # Errors
    /// [`Error::CreateManager`] when IREE cannot allocate it.
    pub fn new(capacity: usize) -> Result<Self, Error> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: plain arguments and a valid out-pointer.
        let status = unsafe {
            sys::iree_hal_executable_plugin_manager_create(capacity, sys::system_allocator(), &mut raw)
        };
        // SAFETY: a fresh status from IREE, consumed once.
        let (code, message) = unsafe { sys::consume_status(status) };
        if !code.is_ok() || raw.is_null() {
            return Err(Error::CreateManager { capacity, code, message: message.unwrap_or_default() });
        }
        // SAFETY: `raw` is a live manager.
        let provider = unsafe { sys::iree_hal_executable_plugin_manager_provider(raw) };
        Ok(Self { raw, provider, xplug_providers: Vec::new() })
    }

    /// Registers `plugin` at the top of the scan order; IREE's manager keeps
    /// its own reference, so the plugin lives as long as the manager.
    ///
    /// # Errors
    /// [`Error::Register`] when the manager is full.
    pub fn register_plugin(&self, plugin: IreePlugin) -> Result<(), Error> {
        // SAFETY: both pointers are live; IREE retains the plugin on success.
        let status = unsafe { sys::iree_hal_executable_plugin_manager_register_plugin(self.raw, plugin.raw) };
        // SAFETY: a fresh status from IREE, consumed once.
        let (code, message) = unsafe { sys::consume_status(status) };
        // Our reference is dropped either way: on success the manager holds one.
        drop(plugin);
        if code.is_ok() {
            Ok(())
        } else {
            Err(Error::Register { what: "a plugin".to_owned(), code, message: message.unwrap_or_default() })
        }
    }

    /// Registers xplug's `manager` as an unowned provider at the top of the
    /// scan order, through [`xplug_manager::Manager::as_c_provider`]: what an
    /// IREE runtime pays with xplug behind it. The manager is kept alive
    /// until this one drops.
    ///
    /// # Errors
    /// [`Error::Register`] when the manager is full.
    pub fn register_xplug_manager(&mut self, manager: Arc<xplug_manager::Manager>) -> Result<(), Error> {
        let c_provider = manager.as_c_provider();
        let provider = sys::RawProvider { self_: c_provider.self_, resolve: Some(c_provider.resolve) };
        // SAFETY: the provider's `self` is the manager inside `manager`,
        // which `self.xplug_providers` keeps alive as long as IREE's manager.
        let status = unsafe { sys::iree_hal_executable_plugin_manager_register_provider(self.raw, provider) };
        // SAFETY: a fresh status from IREE, consumed once.
        let (code, message) = unsafe { sys::consume_status(status) };
        if code.is_ok() {
            self.xplug_providers.push(manager);
            Ok(())
        } else {
            Err(Error::Register {
                what: "an xplug manager".to_owned(),
                code,
                message: message.unwrap_or_default(),
            })
        }
    }

    /// IREE's manager as the bare C provider IREE's executable loader calls
    /// (`{ self, resolve }`), for benchmarks that time the C call alone.
    /// Calling it is unsafe: the manager must outlive the call and the
    /// arrays must hold `count` elements.
    #[must_use]
    pub fn raw_provider(&self) -> RawProvider {
        RawProvider {
            self_: self.provider.self_,
            resolve: self.provider.resolve.expect("IREE's manager provider always has a resolve function"),
        }
    }

    /// IREE's manager as an xplug [`CImportProvider`](xplug_manager::CImportProvider),
    /// borrowed from it: what `xplug_iree::Runtime::device_with_c_provider`
    /// installs in a device's loaders, and what the benchmarks call.
    #[must_use]
    pub fn as_c_provider(&self) -> xplug_manager::CImportProvider<'_> {
        let raw = self.raw_provider();
        // SAFETY: IREE's own resolve for its own manager, valid while the
        // manager (borrowed for the result's lifetime) lives; IREE's
        // manager is thread-safe.
        unsafe { xplug_manager::CImportProvider::from_raw_parts(raw.self_, raw.resolve) }
    }

    /// Resolves `names` (`?` marking optional ones) into `fns`/`contexts` with IREE's manager, exactly as IREE's
    /// executable loader calls it. Slots already filled are skipped by the
    /// providers. Allocates nothing unless IREE fails (it then formats its
    /// status message).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the slices differ in length or a name
    /// is NULL. IREE's own answer, failure or not, is the [`ResolveOutcome`].
    pub fn resolve(
        &self,
        names: &[SymbolName<'_>],
        fns: &mut [*mut c_void],
        contexts: &mut [*mut c_void],
    ) -> Result<ResolveOutcome, Error> {
        resolve_with(self.provider, names, fns, contexts)
    }
}

impl Drop for IreeManager {
    fn drop(&mut self) {
        // SAFETY: we hold the manager's only reference; it releases its
        // plugins. The xplug managers it points to are dropped after this,
        // with the field.
        unsafe { sys::iree_hal_executable_plugin_manager_release(self.raw) };
    }
}
