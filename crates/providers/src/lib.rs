//! Import providers for IREE executable imports: the host side of xplug.
//!
//! An executable declares imports by name; an [`ImportProvider`] fills a
//! [`ResolveRequest`] (names plus function and context slots) with what it
//! exports, following IREE's resolution rules
//! (`docs/src/reference/resolution.md#provider-rules`: filled slots are never overwritten,
//! `?name` is optional, a provider fills what it can and answers
//! [`Error::NotFound`] while a required slot is empty). `xplug-manager`
//! composes many providers; this crate holds the providers themselves, in
//! two layers:
//!
//! - the **checked layer**: [`FnTableProvider`] (a sorted table of Rust-side
//!   functions, [`FnTableEntry`]) and [`Plugin`], an owned, loaded v0
//!   plugin. A plugin is made one way: a [`Loader`] opens its [`Code`], and
//!   [`Code::load`] loads it. Each kind of code has its loader:
//!   [`STATIC`] (a query function linked in, a link-time
//!   [`StaticPluginRegistration`] listed by [`static_plugins`]),
//!   [`SYSTEM_LIBRARY`] (a shared library the OS loader opens, from a file
//!   or from bytes), [`EMBEDDED_ELF`] (a standalone ELF, `.sos`, possibly a
//!   FatELF container, validated and mapped by xplug itself on the
//!   `xplug-elf` crate, re-exported as [`embedded_elf`]), and any a crate
//!   registers with [`LoaderRegistration`] ([`loaders`] lists them). A
//!   [`Code`] is the one record of where a plugin comes from (loader,
//!   [`Origin`], label, SHA-256); what only one kind of code has is its
//!   loader's type, reached with [`Code::downcast_ref`]
//!   ([`SystemLibraryCode`], [`EmbeddedElfCode`]);
//! - the **raw layer**, [`raw`]: each v0 step alone (open, query, header,
//!   load, resolve, unload once, the exports list), for tools that must see
//!   what a broken plugin answers; [`Plugin`] is built on it
//!   ([`SystemLibraryLoader::library_code`] turns an open
//!   [`raw::RawLibrary`] into code,
//!   [`SystemLibraryLoader::into_library`] gives it back). The load
//!   compatibility requirements are small named functions in
//!   [`compatibility`], each returning a typed
//!   [`compatibility::Incompatibility`].
//!
//! Loading a plugin runs the checks of `docs/src/reference/loading.md#load-checks` in order,
//! each failure a typed [`Error`] that names the plugin and says what to
//! do; then calls the plugin's `load` with a [`LoadParamList`] and a
//! [`CountingAllocator`] that counts what the plugin holds
//! ([`AllocationStats`]; leaks are reported at unload). A plugin whose
//! `load` failed is never `unload`ed; a loaded one is `unload`ed exactly
//! once, before its library is closed, and its allocator is released after
//! the library.
//!
//! Loading and resolving emit `tracing` spans (`xplug.plugin.load`,
//! `xplug.plugin.resolve`, `xplug.plugin.unload`).
//!
//! # Example
//!
//! A table of Rust functions resolving an executable's imports:
//!
//! ```
//! use std::ffi::{c_int, c_void};
//! use xplug_providers::abi::Resolution;
//! use xplug_providers::{Error, FnTableEntry, FnTableProvider, ImportProvider, ResolveRequest, SymbolName};
//!
//! unsafe extern "C" fn add_i32(args: *mut c_void, _context: *mut c_void, _: *mut c_void) -> c_int {
//!     // SAFETY: callers pass `[i32; 3]` (a, b, out).
//!     let args = unsafe { &mut *args.cast::<[i32; 3]>() };
//!     args[2] = args[0] + args[1];
//!     0
//! }
//!
//! let provider = FnTableProvider::new("math", [FnTableEntry::new("add_i32", add_i32)])?;
//!
//! let names = [SymbolName::new(c"add_i32"), SymbolName::new(c"?add_i32_avx512")];
//! let mut fns = [std::ptr::null_mut::<c_void>(); 2];
//! let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
//! let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts)?;
//! // The optional fast path is missing; the required import is there.
//! assert_eq!(provider.resolve(&mut request)?, Resolution::MISSING_OPTIONAL);
//!
//! // A required import nobody has.
//! let names = [SymbolName::new(c"mul_i32")];
//! let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
//! let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts)?;
//! assert!(matches!(provider.resolve(&mut request), Err(Error::NotFound { missing: 1, .. })));
//! # Ok::<(), Error>(())
//! ```
//!
//! Loading a plugin from a shared library, resolving through it and
//! unloading it:
//!
//! ```no_run
//! use std::ffi::c_void;
//! use xplug_providers::{ImportProvider, LoadParamList, Loader, ResolveRequest, SYSTEM_LIBRARY, SymbolName};
//!
//! let params = LoadParamList::new().with("scale", "2");
//! // SAFETY: the library is a trusted v0 plugin.
//! let plugin = unsafe { SYSTEM_LIBRARY.open("libc_minimal.so") }?.load(&params)?;
//! println!("{}: {}", plugin.name(), plugin.info().description);
//!
//! let names = [SymbolName::new(c"c_mul_i32")];
//! let mut fns = [std::ptr::null_mut::<c_void>(); 1];
//! let mut contexts = [std::ptr::null_mut::<c_void>(); 1];
//! plugin.resolve(&mut ResolveRequest::new(&names, &mut fns, &mut contexts)?)?;
//!
//! let leaked = plugin.unload();
//! assert_eq!(leaked.live_allocations, 0);
//! # Ok::<(), xplug_providers::Error>(())
//! ```

pub mod compatibility;
mod counting_allocator;
mod digest;
mod error;
mod fn_table;
mod incompatibility;
mod linked;
mod loader;
mod loaders;
mod name;
mod origin;
mod params;
mod pin;
mod plugin;
mod provider;
pub mod raw;
mod request;

pub use counting_allocator::{AllocationStats, CountingAllocator};
pub use digest::Sha256Digest;
pub use error::{Error, ErrorChain, OsLoaderMessage, PluginMessage, Report};
pub use fn_table::{FnTableEntry, FnTableProvider};
pub use linked::{StaticPluginRegistration, static_plugins};
pub use loader::{
    Code, CodeDetail, EMBEDDED_ELF, EmbeddedElfLoader, Loader, LoaderRegistration, MappedCode, STATIC,
    SYSTEM_LIBRARY, StaticLoader, SystemLibraryLoader, loaders,
};
pub use loaders::{EMBEDDED_PREFIX, EMBEDDED_SUFFIX, EmbeddedElfCode, STATIC_PREFIX, SystemLibraryCode};
pub use name::ProviderName;
pub use origin::Origin;
pub use params::LoadParamList;
pub use pin::{ALLOW_LIST_VAR, AllowList, PinPolicy, open_verified};
pub use plugin::{Plugin, PluginInfo};
pub use provider::ImportProvider;
pub use raw::sealed::{CodeBytes, CodeView};
pub use request::{RequestSlots, ResolveRequest, SymbolName};

pub use xplug_abi as abi;
/// The embedded ELF format ([`xplug_elf`]): validation, FatELF containers
/// and mapping, re-exported for hosts that inspect `.sos` files.
pub use xplug_elf as embedded_elf;

/// The `inventory` crate, re-exported so plugin crates can submit a
/// [`StaticPluginRegistration`] without depending on it themselves.
pub use xplug_abi::inventory;
