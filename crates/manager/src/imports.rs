//! A resolved import table that keeps its providers alive.

use std::ffi::{CString, c_int, c_void};
use std::fmt;

use xplug_providers::RequestSlots;
use xplug_providers::abi::{ImportFn, ImportThunkFn, Resolution};

use crate::{Error, Manager};

/// An executable's import table resolved through a [`Manager`].
///
/// Built by [`Manager::resolve_imports`]. It holds a [`Manager`] handle, and the
/// manager owns its plugins, so no function pointer in the table can outlive
/// the library it points into: dropping every other handle to the manager
/// leaves the table fully callable.
///
/// Slots of optional imports nobody exports stay empty;
/// [`ResolvedImports::is_resolved`] tells them apart, and asking for one
/// returns [`Error::UnresolvedImport`] instead of a handle on NULL.
///
/// An import is called one of two ways, each checked once and then as
/// cheap as a plain indirect call:
/// - [`ResolvedImports::import`] gives a [`ResolvedImport`] handle by
///   index, whose `call` is `unsafe` (the caller vouches for the args
///   type at every call), for any args block, including raw ones;
/// - [`ResolvedImports::typed`] gives a [`TypedImport`](crate::TypedImport)
///   by name, its args type promised once, after which every call is
///   safe.
pub struct ResolvedImports {
    manager: Manager,
    names: Vec<CString>,
    /// Function and context side by side, so a call reads one slot.
    slots: Box<[Slot]>,
    resolution: Resolution,
}

/// One resolved import: its function (if any provider supplied one) and the
/// context the provider paired with it.
#[derive(Clone, Copy)]
struct Slot {
    function: Option<ImportFn>,
    context: *mut c_void,
}

// SAFETY: the raw pointers are import functions and their contexts handed out
// by providers. The provider contract (`ImportProvider` is `Send + Sync`, and
// the v0 ABI, `docs/src/reference/resolution.md#thread-safety`) makes imports callable
// from any thread, concurrently,
// as IREE's worker threads call them; the table itself is immutable after
// construction and the `Manager` handle keeping the code alive is `Send + Sync`.
unsafe impl Send for ResolvedImports {}
// SAFETY: as above; `&ResolvedImports` only reads the immutable table.
unsafe impl Sync for ResolvedImports {}

impl fmt::Debug for ResolvedImports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedImports")
            .field("names", &self.names)
            .field("resolved", &(0..self.len()).map(|i| self.is_resolved(i)).collect::<Vec<_>>())
            .field("resolution", &self.resolution)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Resolves an executable's import table (names as declared, `?` marking
    /// optional imports) into a [`ResolvedImports`] that keeps this manager
    /// (and so every plugin it owns) alive.
    ///
    /// # Errors
    /// [`Error::InvalidImportName`] for a name with an interior NUL or an
    /// empty name; otherwise as [`Manager::resolve`].
    pub fn resolve_imports<I, S>(&self, names: I) -> Result<ResolvedImports, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names = names
            .into_iter()
            .enumerate()
            .map(|(index, name)| {
                let name = name.as_ref();
                let invalid = |reason| Error::InvalidImportName { index, name: name.to_owned(), reason };
                if xplug_providers::abi::bare_name(name.as_bytes()).is_empty() {
                    return Err(invalid("the name is empty"));
                }
                CString::new(name).map_err(|_| invalid("it contains a NUL byte, which C names cannot hold"))
            })
            .collect::<Result<Vec<CString>, Error>>()?;
        let mut slots = RequestSlots::for_names(&names);
        let resolution = self.resolve(&mut slots.request())?;
        let (fns, contexts) = slots.into_slots();
        let slots = fns
            .iter()
            .zip(&contexts)
            .map(|(&function, &context)| Slot {
                // SAFETY: a slot holds NULL or what a provider filled in as an
                // import function, and the v0 ABI gives every import the
                // `ImportFn` signature.
                function: unsafe { xplug_providers::abi::import_fn_from_ptr(function) },
                context,
            })
            .collect();
        Ok(ResolvedImports { manager: self.clone(), names, slots, resolution })
    }
}

impl ResolvedImports {
    /// Number of imports in the table.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True for an empty table.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The declared name of import `index` (with its `?`, if any).
    #[must_use]
    pub fn name(&self, index: usize) -> Option<&str> {
        // Names came in as `&str`, so they are valid UTF-8.
        self.names.get(index).and_then(|name| name.to_str().ok())
    }

    /// True when import `index` exists and has a function.
    #[must_use]
    pub fn is_resolved(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(|slot| slot.function.is_some())
    }

    /// The index of the first import whose bare name (without `?`) equals
    /// the bare form of `name`, so `index_of("f")` and `index_of("?f")` both
    /// find an import declared as `?f`.
    #[must_use]
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let wanted = xplug_providers::abi::bare_name(name.as_bytes());
        self.names.iter().position(|declared| xplug_providers::abi::bare_name(declared.as_bytes()) == wanted)
    }

    /// The resolution bits ([`Resolution::MISSING_OPTIONAL`] when an
    /// optional import is unresolved).
    #[must_use]
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// The raw function pointer of import `index` (NULL when unresolved or
    /// out of range).
    #[must_use]
    pub fn function(&self, index: usize) -> *mut c_void {
        self.slots
            .get(index)
            .and_then(|slot| slot.function)
            .map_or(std::ptr::null_mut(), |f| f as *mut c_void)
    }

    /// The context pointer of import `index` (NULL when unresolved or out of
    /// range, or when the provider gave none).
    #[must_use]
    pub fn context(&self, index: usize) -> *mut c_void {
        self.slots.get(index).map_or(std::ptr::null_mut(), |slot| slot.context)
    }

    /// The manager that resolved the table (and keeps it valid).
    #[must_use]
    pub fn manager(&self) -> &Manager {
        &self.manager
    }

    /// A handle on resolved import `index`, checked once, for a hot loop:
    /// calling it is a plain indirect call with the import's context, as a
    /// runtime's dispatch loop makes. The handle borrows the table, so it
    /// cannot outlive the code it points into.
    ///
    /// # Errors
    /// [`Error::ImportIndexOutOfRange`] for a bad index and
    /// [`Error::UnresolvedImport`] for an optional import nobody exports.
    ///
    /// ```
    /// # use std::ffi::{c_int, c_void};
    /// # use std::sync::Arc;
    /// # use xplug_manager::Manager;
    /// # use xplug_manager::providers::{FnTableEntry, FnTableProvider};
    /// # unsafe extern "C" fn double(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    /// #     // SAFETY: callers pass an `i32`.
    /// #     unsafe { *args.cast::<i32>() *= 2 };
    /// #     0
    /// # }
    /// let manager = Manager::new();
    /// manager.register_provider(Arc::new(FnTableProvider::new("math", [FnTableEntry::new("double", double)])?))?;
    /// let imports = manager.resolve_imports(["double"])?;
    /// let double = imports.import(0)?;
    /// let mut value = 1i32;
    /// for _ in 0..10 {
    ///     // SAFETY: `double` takes an `i32`.
    ///     assert_eq!(unsafe { double.call(&mut value) }, 0);
    /// }
    /// assert_eq!(value, 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn import(&self, index: usize) -> Result<ResolvedImport<'_>, Error> {
        match self.slots.get(index) {
            Some(&Slot { function: Some(function), context }) => {
                Ok(ResolvedImport { function, context, _table: std::marker::PhantomData })
            }
            _ => Err(self.import_error(index)),
        }
    }

    /// Why import `index` cannot be called (out of range, or unresolved).
    #[cold]
    #[inline(never)]
    fn import_error(&self, index: usize) -> Error {
        if index >= self.len() {
            Error::ImportIndexOutOfRange { index, len: self.len() }
        } else {
            Error::UnresolvedImport { index, name: self.name(index).unwrap_or_default().to_owned() }
        }
    }
}

/// One resolved import, borrowed from a [`ResolvedImports`] table
/// ([`ResolvedImports::import`]): its function and context, checked once.
#[derive(Clone, Copy)]
pub struct ResolvedImport<'table> {
    function: ImportFn,
    context: *mut c_void,
    _table: std::marker::PhantomData<&'table ResolvedImports>,
}

// SAFETY: as for `ResolvedImports`: imports are callable from any thread by
// the provider contract, and the borrow keeps the table (and so the code)
// alive.
unsafe impl Send for ResolvedImport<'_> {}
// SAFETY: as above; the handle is immutable.
unsafe impl Sync for ResolvedImport<'_> {}

impl fmt::Debug for ResolvedImport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedImport")
            .field("function", &(self.function as *const c_void))
            .field("context", &self.context)
            .finish()
    }
}

impl ResolvedImport<'_> {
    /// The import's function.
    #[must_use]
    pub fn function(&self) -> ImportFn {
        self.function
    }

    /// The context its provider paired with it.
    #[must_use]
    pub fn context(&self) -> *mut c_void {
        self.context
    }

    /// Calls the import as an executable would: `fn(args, context, NULL)`,
    /// returning its result (0 is success).
    ///
    /// # Safety
    /// `P` must be the parameter struct the import expects (its C layout,
    /// typically `#[repr(C)]`), and the import must be sound to call with
    /// it and its context: the manager cannot check what foreign code does.
    #[inline]
    pub unsafe fn call<P>(&self, args: &mut P) -> c_int {
        // SAFETY: the caller guarantees `P`; the context is the provider's;
        // the borrowed table keeps the manager, and so the code, alive.
        unsafe { (self.function)(std::ptr::from_mut(args).cast(), self.context, std::ptr::null_mut()) }
    }

    /// Calls the import through `thunk`: `thunk(fn, args, context, NULL)`.
    ///
    /// # Safety
    /// As [`ResolvedImport::call`], and `thunk` must call its function
    /// argument with the other arguments (or otherwise be sound to call).
    #[inline]
    pub unsafe fn call_with_thunk<P>(&self, thunk: ImportThunkFn, args: &mut P) -> c_int {
        // SAFETY: as in `call`, plus the caller's guarantee about `thunk`.
        unsafe { thunk(self.function, std::ptr::from_mut(args).cast(), self.context, std::ptr::null_mut()) }
    }
}
