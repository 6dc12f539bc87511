//! Typed import handles: the args type promised once, every call safe.

use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;

use xplug_providers::abi::AnyBitPattern;

use crate::{Error, ResolvedImport, ResolvedImports};

impl ResolvedImports {
    /// A handle on the import declared as `name` (with or without its `?`)
    /// that calls it with a `&mut P`: the name lookup, the resolved check
    /// and the args type are settled here, once, so each call is safe and
    /// as cheap as [`ResolvedImport::call`].
    ///
    /// `P` must be [`AnyBitPattern`]: the import may write any bytes into
    /// the args block, and every bit pattern must stay a valid `P`. A
    /// struct deriving `xplug_sdk::ImportArgs` qualifies, so a runtime can
    /// share the plugin's own args type (or the C header `xplug header`
    /// writes for it).
    ///
    /// ```
    /// # use std::ffi::{c_int, c_void};
    /// # use std::sync::Arc;
    /// use xplug_manager::{AnyBitPattern, Manager};
    /// # use xplug_manager::providers::{FnTableEntry, FnTableProvider};
    ///
    /// #[repr(C)]
    /// struct AddArgs { a: i32, b: i32, out: i32 }
    /// // SAFETY: three `i32`s, no padding: any bytes are a value.
    /// unsafe impl AnyBitPattern for AddArgs {}
    ///
    /// # unsafe extern "C" fn add(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    /// #     // SAFETY: callers pass an `AddArgs`.
    /// #     let p = unsafe { &mut *args.cast::<AddArgs>() };
    /// #     p.out = p.a + p.b;
    /// #     0
    /// # }
    /// let manager = Manager::new();
    /// manager.register_provider(Arc::new(FnTableProvider::new("math", [FnTableEntry::new("add", add)])?))?;
    /// let imports = manager.resolve_imports(["add"])?;
    /// // SAFETY: `add` takes an `AddArgs` (its C declaration says so).
    /// let add = unsafe { imports.typed::<AddArgs>("add") }?;
    /// let mut args = AddArgs { a: 2, b: 40, out: 0 };
    /// assert_eq!(add.call(&mut args), 0); // safe from here on
    /// assert_eq!(args.out, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ImportNotInTable`] (with a did-you-mean) when the table
    /// does not declare `name`; [`Error::UnresolvedImport`] for an optional
    /// import nobody exports.
    ///
    /// # Safety
    /// The import must take a `P` (the C struct it was compiled against,
    /// same size and field layout) and be sound to call with one and its
    /// context: the manager cannot check what foreign code expects.
    pub unsafe fn typed<P: AnyBitPattern>(&self, name: &str) -> Result<TypedImport<'_, P>, Error> {
        let index = self.index_of(name).ok_or_else(|| {
            let declared: Vec<&str> = (0..self.len()).filter_map(|i| self.name(i)).collect();
            let bare = |text: &str| {
                String::from_utf8_lossy(xplug_providers::abi::bare_name(text.as_bytes())).into_owned()
            };
            let bare_declared: Vec<String> = declared.iter().map(|text| bare(text)).collect();
            Error::ImportNotInTable {
                name: name.to_owned(),
                suggestion: crate::suggest::closest(&bare(name), bare_declared.iter()).map(str::to_owned),
            }
        })?;
        Ok(TypedImport { import: self.import(index)?, _params: PhantomData })
    }
}

/// A resolved import bound to its args type `P`
/// ([`ResolvedImports::typed`]): calling it is safe.
pub struct TypedImport<'table, P> {
    import: ResolvedImport<'table>,
    _params: PhantomData<fn(&mut P)>,
}

impl<P> Clone for TypedImport<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for TypedImport<'_, P> {}

impl<P> fmt::Debug for TypedImport<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedImport")
            .field("args", &std::any::type_name::<P>())
            .field("import", &self.import)
            .finish()
    }
}

impl<P: AnyBitPattern> TypedImport<'_, P> {
    /// Calls the import with `args`, as an executable would:
    /// `fn(args, context, NULL)`; returns its result (0 is success).
    #[inline]
    pub fn call(&self, args: &mut P) -> c_int {
        // SAFETY: `typed`'s caller promised the import takes a `P`; `P` is
        // `AnyBitPattern`, so whatever the import writes leaves a valid
        // `P`; the borrowed table keeps the code alive.
        unsafe { self.import.call(args) }
    }

    /// The untyped handle (function and context).
    #[must_use]
    pub fn untyped(&self) -> ResolvedImport<'_> {
        self.import
    }
}
