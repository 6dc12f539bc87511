//! A provider over a table of Rust-side functions.

use std::ffi::c_void;

use xplug_abi::{ImportFn, Resolution, gallop_search};

use crate::{Error, ImportProvider, ProviderName, ResolveRequest};

/// One export of a [`FnTableProvider`]: a bare import name, the function and
/// the context handed to it.
///
/// ```
/// use std::ffi::{c_int, c_void};
/// use xplug_providers::FnTableEntry;
///
/// unsafe extern "C" fn noop(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
///     0
/// }
/// let entry = FnTableEntry::new("noop", noop);
/// assert_eq!(entry.name(), b"noop");
/// assert!(entry.context().is_null());
/// ```
#[derive(Clone, Debug)]
pub struct FnTableEntry {
    name: Box<[u8]>,
    function: ImportFn,
    context: *mut c_void,
}

// SAFETY: the only non-thread-safe-looking field is `context`. It is either
// NULL (safe constructor) or was supplied through `with_context`, whose
// contract makes the caller promise it is usable from any thread for as long
// as the provider holding the entry lives. The entry never dereferences it.
unsafe impl Send for FnTableEntry {}
// SAFETY: as above; the entry is immutable after construction.
unsafe impl Sync for FnTableEntry {}

impl FnTableEntry {
    /// An export whose context is NULL.
    ///
    /// `name` is the bare import name (no `?` prefix, no NUL byte);
    /// [`FnTableProvider::new`] rejects names that break this rule.
    #[must_use]
    pub fn new(name: impl Into<Vec<u8>>, function: ImportFn) -> Self {
        Self { name: name.into().into_boxed_slice(), function, context: std::ptr::null_mut() }
    }

    /// An export whose function receives `context` on every call.
    ///
    /// # Safety
    /// `context` is handed to whoever resolves `name` and then passed to
    /// `function` from any thread, at any time while the provider holding
    /// this entry (or anything that resolved through it) is alive. The caller
    /// guarantees that `context` stays valid that long and that `function`
    /// may use it from several threads at once.
    #[must_use]
    pub unsafe fn with_context(name: impl Into<Vec<u8>>, function: ImportFn, context: *mut c_void) -> Self {
        Self { name: name.into().into_boxed_slice(), function, context }
    }

    /// The bare name.
    #[must_use]
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The function.
    #[must_use]
    pub fn function(&self) -> ImportFn {
        self.function
    }

    /// The context (NULL unless given through [`Self::with_context`]).
    #[must_use]
    pub fn context(&self) -> *mut c_void {
        self.context
    }
}

/// An [`ImportProvider`] over a fixed table of functions.
///
/// The table is sorted by name once, at construction. Resolution walks the
/// request in order and looks each bare name up with
/// [`xplug_abi::gallop_search`], starting from where the previous name
/// landed: for the sorted requests IREE's compiler emits this is a single
/// merge pass over the table, and it stays correct (just slower) on unsorted
/// requests and duplicates.
///
/// ```
/// use std::ffi::{c_int, c_void};
/// use xplug_providers::{FnTableEntry, FnTableProvider, ImportProvider, ResolveRequest, SymbolName};
/// use xplug_providers::abi::Resolution;
///
/// unsafe extern "C" fn add(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
///     0
/// }
/// let provider = FnTableProvider::new("math", [FnTableEntry::new("add", add)])?;
///
/// let names = [SymbolName::new(c"add"), SymbolName::new(c"?simd_add")];
/// let mut fns = [std::ptr::null_mut::<c_void>(); 2];
/// let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
/// let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts)?;
/// assert_eq!(provider.resolve(&mut request)?, Resolution::MISSING_OPTIONAL);
/// assert!(request.is_filled(0) && !request.is_filled(1));
/// # Ok::<(), xplug_providers::Error>(())
/// ```
#[derive(Debug)]
pub struct FnTableProvider {
    name: ProviderName,
    entries: Vec<FnTableEntry>,
}

fn entry_key(entry: &FnTableEntry) -> &[u8] {
    &entry.name
}

impl FnTableProvider {
    /// A provider named `name` exporting `entries`.
    ///
    /// # Errors
    /// - [`Error::DuplicateExport`] when two entries share a name;
    /// - [`Error::InvalidExport`] for an empty name, a name starting with `?`
    ///   or a name containing a NUL byte (no request could ever match them).
    pub fn new(
        name: impl Into<ProviderName>,
        entries: impl IntoIterator<Item = FnTableEntry>,
    ) -> Result<Self, Error> {
        let name = name.into();
        let mut entries: Vec<FnTableEntry> = entries.into_iter().collect();
        for entry in &entries {
            let reason = if entry.name.is_empty() {
                Some("the name is empty")
            } else if entry.name[0] == b'?' {
                Some("export the bare name; `?` only marks optional imports in requests")
            } else if entry.name.contains(&0) {
                Some("the name contains a NUL byte; import names are C strings")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(Error::InvalidExport {
                    provider: name.to_string(),
                    name: String::from_utf8_lossy(&entry.name).into_owned(),
                    reason: reason.to_owned(),
                });
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(pair) = entries.windows(2).find(|pair| pair[0].name == pair[1].name) {
            return Err(Error::DuplicateExport {
                provider: name.to_string(),
                name: String::from_utf8_lossy(&pair[0].name).into_owned(),
            });
        }
        Ok(Self { name, entries })
    }

    /// The entries, sorted by name.
    #[must_use]
    pub fn entries(&self) -> &[FnTableEntry] {
        &self.entries
    }

    /// The entry exporting the bare name `name`, if any.
    #[must_use]
    pub fn get(&self, name: &[u8]) -> Option<&FnTableEntry> {
        gallop_search(&self.entries, entry_key, name, 0).ok().map(|index| &self.entries[index])
    }
}

impl FnTableProvider {
    /// Fills every empty slot whose bare name the table holds: one
    /// galloping search per name, starting where the previous one ended
    /// (linear overall for sorted requests).
    fn fill_from_table(&self, request: &mut ResolveRequest<'_>) {
        let mut hint = 0;
        for (index, symbol) in request.names().iter().enumerate() {
            if request.is_filled(index) {
                continue;
            }
            match gallop_search(&self.entries, entry_key, symbol.bare(), hint) {
                Ok(found) => {
                    let entry = &self.entries[found];
                    request.fill(index, entry.function, entry.context);
                    hint = found;
                }
                Err(insert) => hint = insert,
            }
        }
    }
}

impl ImportProvider for FnTableProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        self.fill_from_table(request);
        request.outcome(&self.name)
    }

    /// Fills what the table has; nothing here can fail.
    #[inline]
    fn supply(&self, request: &mut ResolveRequest<'_>) -> Result<(), Error> {
        self.fill_from_table(request);
        Ok(())
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        Some(self.entries.iter().map(|entry| String::from_utf8_lossy(&entry.name).into_owned()).collect())
    }
}
