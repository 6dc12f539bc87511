//! The xplug plugin manager: composes import providers and plugins in IREE's
//! scan order (newest first) with lock-free resolution.
//!
//! A runtime loading an executable asks the [`Manager`] to resolve the
//! executable's imports. The manager asks its providers, newest registration
//! first, until every import has a function, and reports what is missing with
//! IREE's status codes (SPEC §2). Plugins loaded from specs like IREE's
//! `--executable_plugin` flag ([`spec`], `Manager::from_specs`,
//! `Manager::from_env`) or linked into the binary (`with_static_plugins`) are
//! owned by the manager; [`ResolvedImports`] keeps the manager, and so the
//! plugins' code, alive for as long as resolved pointers exist.
//!
//! # Example
//!
//! A runtime with one provider, resolving an import table and calling an
//! import:
//!
//! ```
//! use std::ffi::c_void;
//! use std::sync::Arc;
//! use xplug_manager::Manager;
//! use xplug_manager::providers::abi::{ImportFn, Resolution};
//! use xplug_manager::providers::{Error, ImportProvider, ResolveRequest};
//!
//! #[repr(C)]
//! struct AddParams { a: i32, b: i32, out: i32 }
//!
//! unsafe extern "C" fn add(params: *mut c_void, _context: *mut c_void, _reserved: *mut c_void) -> i32 {
//!     // SAFETY: callers pass an `AddParams`, as the import's contract says.
//!     let params = unsafe { &mut *params.cast::<AddParams>() };
//!     params.out = params.a + params.b;
//!     0
//! }
//!
//! /// A provider exporting `add` from a name table.
//! struct Math;
//! impl ImportProvider for Math {
//!     fn name(&self) -> &str { "math" }
//!     fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
//!         const TABLE: [(&[u8], ImportFn); 1] = [(b"add", add)];
//!         for i in 0..request.len() {
//!             let bare = request.names()[i].bare();
//!             if let Some((_, function)) = TABLE.iter().find(|(name, _)| *name == bare) {
//!                 request.fill(i, *function, std::ptr::null_mut());
//!             }
//!         }
//!         request.outcome("math")
//!     }
//!     fn exported_names(&self) -> Option<Vec<String>> { Some(vec!["add".into()]) }
//! }
//!
//! let manager = Arc::new(Manager::new());
//! manager.register_provider(Arc::new(Math)).unwrap();
//!
//! // The executable's import table: `add` is required, `fast_add` optional.
//! let imports = manager.resolve_imports(["add", "?fast_add"]).unwrap();
//! assert_eq!(imports.resolution(), Resolution::MISSING_OPTIONAL);
//! assert!(!imports.is_resolved(imports.index_of("fast_add").unwrap()));
//!
//! let mut params = AddParams { a: 2, b: 40, out: 0 };
//! // SAFETY: `add` takes an `AddParams`.
//! let result = unsafe { imports.call(imports.index_of("add").unwrap(), &mut params) }.unwrap();
//! assert_eq!((result, params.out), (0, 42));
//!
//! // A missing required import is reported by name, with a suggestion.
//! let error = manager.resolve_imports(["ad"]).unwrap_err();
//! assert!(error.to_string().contains("`ad` (did you mean `add`?)"));
//! ```
//!
//! # Threads
//!
//! [`Manager`] is `Send + Sync`. Registration may run while other threads
//! resolve; resolution never waits for a lock (see [`Manager`]).
//!
//! # Tracing
//!
//! Each resolve runs in a `debug` span `xplug_resolve` recording the
//! provider and name counts, with events for provider failures and the
//! outcome; registration and provider drops emit `debug`/`trace` events.

mod c_provider;
mod error;
mod imports;
mod loading;
mod manager;
mod registry;
pub mod spec;
pub mod suggest;

pub use c_provider::{CImportProvider, CResolveFn};
pub use error::{Error, MissingImport};
pub use imports::ResolvedImports;
pub use manager::{Manager, ResolveTrace, SlotSource};

pub use xplug_providers as providers;

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
