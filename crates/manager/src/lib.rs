//! The xplug plugin manager: composes import providers and plugins in IREE's
//! scan order (newest first) with lock-free resolution.
//!
//! A runtime loading an executable asks the [`Manager`] to resolve the
//! executable's imports. The manager asks its providers, newest registration
//! first, until every import has a function, and reports what is missing with
//! IREE's status codes (`docs/src/reference/resolution.md#outcome`). Plugins loaded from
//! specs like IREE's
//! `--executable_plugin` flag ([`spec`], [`Manager::from_specs`],
//! [`Manager::from_env`]) or linked into the binary
//! ([`ManagerBuilder::static_plugins`]) are owned by the manager;
//! [`ResolvedImports`] keeps the manager, and so the plugins' code, alive
//! for as long as resolved pointers exist.
//!
//! # Example
//!
//! A runtime with a generic provider and a faster one registered later (so
//! it wins where both export a name), resolving an executable's import table
//! and calling an import:
//!
//! ```
//! use std::ffi::{c_int, c_void};
//! use std::sync::Arc;
//! use xplug_manager::Manager;
//! use xplug_manager::providers::abi::Resolution;
//! use xplug_manager::providers::{FnTableEntry, FnTableProvider};
//!
//! #[repr(C)]
//! struct AddArgs { a: i32, b: i32, out: i32 }
//!
//! unsafe extern "C" fn add(args: *mut c_void, _context: *mut c_void, _reserved: *mut c_void) -> c_int {
//!     // SAFETY: callers pass an `AddArgs`, as the import's contract says.
//!     let args = unsafe { &mut *args.cast::<AddArgs>() };
//!     args.out = args.a + args.b;
//!     0
//! }
//!
//! unsafe extern "C" fn fast_add(args: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int {
//!     // SAFETY: same contract as `add`.
//!     unsafe { add(args, context, reserved) };
//!     1 // says "the fast one ran", for the example
//! }
//!
//! let manager = Manager::new();
//! let generic = FnTableProvider::new("generic", [FnTableEntry::new("add", add), FnTableEntry::new("sub", add)])?;
//! let fast = FnTableProvider::new("fast", [FnTableEntry::new("add", fast_add)])?;
//! manager.register_provider(Arc::new(generic))?;
//! manager.register_provider(Arc::new(fast))?; // newer: asked first
//! assert_eq!(manager.providers(), ["fast", "generic"]);
//!
//! // The executable's import table: `add` is required, `mul` optional.
//! let imports = manager.resolve_imports(["add", "?mul"])?;
//! assert_eq!(imports.resolution(), Resolution::MISSING_OPTIONAL);
//! assert!(!imports.is_resolved(imports.index_of("mul").unwrap()));
//!
//! let mut args = AddArgs { a: 2, b: 40, out: 0 };
//! let add = imports.import(imports.index_of("add").unwrap())?;
//! // SAFETY: `add` takes an `AddArgs`.
//! let result = unsafe { add.call(&mut args) };
//! assert_eq!((result, args.out), (1, 42)); // the fast provider's function ran
//!
//! // A missing required import is reported by name, with a suggestion.
//! let error = manager.resolve_imports(["ad"]).unwrap_err();
//! assert!(error.to_string().contains("`ad` (did you mean `add`?)"), "{error}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Static and dynamic plugins together
//!
//! A runtime links some plugins in (registered through `inventory` by
//! `xplug-sdk`; keep each plugin crate referenced, e.g. `use my_plugin as _;`)
//! and loads others from shared libraries named by the operator, IREE-style
//! (`path.so?key=value`). Static plugins are registered first, so a dynamic
//! plugin exporting the same name overrides them:
//!
//! ```no_run
//! use xplug_manager::Manager;
//!
//! let manager = Manager::builder().static_plugins().build()?;
//! // SAFETY: the operator named these plugins; loading one runs its code,
//! // which we trust to follow the v0 ABI.
//! unsafe {
//!     manager.load_spec("target/plugins/release/libsample_system.so?multiplier=2")?;
//!     manager.load_spec("target/plugins/release/libc_sample.so")?;
//! }
//! let imports = manager.resolve_imports(["simple_mul_workgroup", "?optional_fast_path"])?;
//! println!("{} imports resolved", imports.len());
//! # Ok::<(), xplug_manager::Error>(())
//! ```
//!
//! [`Manager::from_specs`] and [`Manager::from_env`] (`XPLUG_PLUGINS`) build
//! the same from a list; [`Manager::register_plugin`] takes a plugin loaded
//! by hand. The manager hands itself to C code as IREE's import provider
//! struct through [`Manager::as_c_provider`].
//!
//! # Errors
//!
//! Every error prints only its own message and gives its cause as
//! `source()`. A program returning them from `main` returns a [`Report`]
//! (`?` converts any error), which prints the message and each cause once,
//! instead of the derived `Debug` dump; `anyhow::Error` prints the same
//! chain.
//!
//! # Live swap
//!
//! A plugin loaded with [`Manager::load_swappable`] (or `?swappable` in its
//! spec) can be replaced by a new build while executables run (the
//! [`swap`] crate, `docs/src/operating/swap.md`).
//!
//! # Threads
//!
//! [`Manager`] is a cheap-to-clone handle (an `Arc` inside: clones share
//! one registry), `Send + Sync`; it is configured once, on
//! [`Manager::builder`]. Registration may run while other threads
//! resolve; resolution never waits for a lock (see [`Manager`]).
//!
//! # Tracing
//!
//! Each resolve runs in a `debug` span `xplug_resolve` recording the
//! provider and name counts, with events for provider failures and the
//! outcome; registration and provider drops emit `debug`/`trace` events.

mod c_provider;
mod config;
mod error;
mod imports;
mod loading;
mod manager;
mod registry;
pub mod spec;
pub mod suggest;
mod typed;

pub use c_provider::{CImportProvider, CResolveFn, CResolver};
pub use config::{CRASH_REPORT_ENV, ManagerBuilder, PERF_MAP_ENV};
pub use error::{Error, MissingImport};
pub use imports::{ResolvedImport, ResolvedImports};
pub use manager::{Manager, Registered, ResolveTrace, SlotRewrite, SlotSource};
pub use typed::TypedImport;
pub use xplug_providers::abi::AnyBitPattern;
pub use xplug_providers::{ErrorChain, Report};

pub use xplug_providers as providers;
pub use xplug_swap as swap;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Manager>();
        check::<ResolvedImports>();
    }
}
