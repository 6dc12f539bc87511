//! The raw v0 layer: each step of hosting a plugin, usable alone.
//!
//! [`crate::Plugin`] is built from these steps and adds the load checks of
//! [`crate::compatibility`], names, tracing and the unload policy. A tool that must
//! see exactly what a broken plugin answers (`xplug check`, a probe in a
//! child process) uses the steps directly:
//!
//! 1. open the code: [`RawLibrary::open`] / [`RawLibrary::open_image`] (the
//!    OS loader), any [`Loader`](crate::Loader)'s `open` (an embedded ELF
//!    is mapped by [`crate::EMBEDDED_ELF`]; a mapped image's query is
//!    [`RawQuery::from_elf_image`]), or a query function linked in
//!    ([`RawQuery::new`]);
//! 2. get the query function: [`RawLibrary::query`];
//! 3. call it and copy the table: [`RawQuery::query`] → [`RawTable`], and
//!    its header: [`RawTable::header`] → [`RawHeader`];
//! 4. `load` with a host allocator and parameters: [`RawTable::load`] →
//!    [`RawInstance`] (a refused `load` gives no instance, so nothing can
//!    `unload` it);
//! 5. `resolve`: [`RawInstance::resolve`], the plugin's status and bits
//!    unjudged;
//! 6. `unload`, exactly once: [`RawInstance::unload`] or drop;
//! 7. xplug's optional exports (names list, declared parameters, load
//!    error), the same way from a library and from a `.sos`:
//!    [`OptionalExports`].
//!
//! Each step that calls into the plugin first reports its [`Stage`] to the
//! hook a tool may install ([`set_stage_hook`]; crash isolation uses it to
//! name the step a crashed child was in).
//!
//! Lifetimes carry the one promise the raw layer needs: a [`RawQuery`],
//! [`RawTable`] or [`RawInstance`] borrows the code it came from (`'code`),
//! so none can outlive its library. Trust is placed once, where the code is
//! opened or a query function is wrapped (both `unsafe`); the steps after
//! it are safe.
//!
//! ```no_run
//! use std::ffi::c_void;
//! use xplug_providers::abi::Version;
//! use xplug_providers::raw::RawLibrary;
//! use xplug_providers::{CountingAllocator, LoadParamList, ResolveRequest, SymbolName};
//!
//! // SAFETY: the operator chose this file as a v0 plugin.
//! let library = unsafe { RawLibrary::open("target/plugins/release/libc_sample.so") }?;
//! let table = library.query()?.query(Version::LATEST).expect("a v0.1 plugin");
//! let header = table.header().expect("a readable header").expect("a header");
//! assert_eq!(header.name.as_deref(), Some("c_sample"));
//! let allocator = CountingAllocator::new();
//! let instance = table.load(&allocator, &LoadParamList::new()).expect("load succeeds");
//! let names = [SymbolName::new(c"simple_mul_workgroup")];
//! let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut(); 1]);
//! let (code, bits) = instance.resolve(&mut ResolveRequest::new(&names, &mut fns, &mut contexts)?);
//! println!("resolve: {code}, {bits:?}");
//! let stats = instance.unload();
//! assert_eq!(stats.live_allocations, 0);
//! # Ok::<(), xplug_providers::Error>(())
//! ```

mod elf;
mod instance;
mod library;
mod optional;
pub(crate) mod sealed;
mod stage;

use std::ffi::{CStr, c_char};
use std::marker::PhantomData;
use std::sync::Arc;

use xplug_abi::{EnvironmentV0, Features, Header, PluginV0, QueryFn, Sanitizer, StatusCode, Version};

pub use instance::RawInstance;
pub(crate) use library::is_bare_name;
pub use library::{RawLibrary, SymbolKind};
pub use optional::{
    FieldInfo, ImportLayoutInfo, MAX_IMPORT_LAYOUTS, MAX_LAYOUT_FIELDS, MAX_LISTED_EXPORTS, MAX_PARAM_DECLS,
    OptionalExports, ParamDeclInfo,
};
pub use stage::{Stage, set_stage_hook};

use crate::incompatibility::Incompatibility;
use crate::{CountingAllocator, LoadParamList};
use xplug_elf::ReadableRanges;

/// A plugin's query function, valid while the code it lives in is (`'code`).
#[derive(Clone, Copy)]
pub struct RawQuery<'code> {
    query: QueryFn,
    /// For a query of an embedded ELF image: where the image's readable
    /// segments lie, which every pointer read out of its data must lead
    /// into.
    image: Option<&'code ReadableRanges>,
    _code: PhantomData<&'code ()>,
}

impl std::fmt::Debug for RawQuery<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawQuery").field("query", &(self.query as *const ())).finish()
    }
}

impl<'code> RawQuery<'code> {
    /// Wraps a query function.
    ///
    /// # Safety
    /// `query` implements the v0 query contract (`docs/src/reference/abi.md#query`): it
    /// returns NULL or a pointer to a v0 table that stays valid and
    /// unchanged for `'code`, with a NULL or valid header whose strings are
    /// NULL or NUL-terminated, and functions that obey the v0 ABI (callable
    /// from any thread). For a query function linked into the program,
    /// `'code` may be `'static`.
    #[must_use]
    pub unsafe fn new(query: QueryFn) -> Self {
        Self { query, image: None, _code: PhantomData }
    }

    /// Wraps the query function of an embedded ELF image whose readable
    /// segments are `image`: the header pointer and the header's strings
    /// the table holds are read only when they lead inside those segments
    /// ([`RawTable::header`]).
    ///
    /// # Safety
    /// As [`RawQuery::new`], except that the header and its strings need
    /// not be valid: they may hold any value.
    #[must_use]
    pub unsafe fn in_image(query: QueryFn, image: &'code ReadableRanges) -> Self {
        Self { query, image: Some(image), _code: PhantomData }
    }

    /// The same query, its borrow of the code cut.
    ///
    /// # Safety
    /// The code the query came from stays mapped, at the same address,
    /// for as long as the result and anything obtained through it is used.
    pub(crate) unsafe fn detach(self) -> RawQuery<'static> {
        RawQuery {
            query: self.query,
            // SAFETY: the ranges live in the code, which outlives every use
            // (the caller's promise).
            image: self.image.map(|ranges| unsafe { &*std::ptr::from_ref(ranges) }),
            _code: PhantomData,
        }
    }

    /// The function pointer itself.
    #[must_use]
    pub fn as_fn(self) -> QueryFn {
        self.query
    }

    /// Calls `query(max_version, NULL)` and copies the v0 table it returns;
    /// `None` when the plugin answers NULL (its lowest version is above
    /// `max_version`).
    #[must_use]
    pub fn query(self, max_version: Version) -> Option<RawTable<'code>> {
        stage::enter(Stage::Query);
        // SAFETY: the v0 query contract (promised in `new`).
        let table = unsafe { (self.query)(max_version, std::ptr::null_mut()) };
        if table.is_null() {
            return None;
        }
        // SAFETY: a non-NULL result points to the plugin's v0 table, valid
        // for `'code` (promised in `new`); it is copied out.
        let table = unsafe { table.cast::<PluginV0>().read() };
        Some(RawTable { table, image: self.image, _code: PhantomData })
    }
}

/// What a plugin's header says, copied out of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawHeader {
    /// The ABI version the plugin was built against.
    pub version: Version,
    /// `name`, lossily decoded; `None` for a NULL pointer.
    pub name: Option<String>,
    /// `description`, lossily decoded; `None` for a NULL pointer.
    pub description: Option<String>,
    /// The feature bits it declares (any `u32`).
    pub features: Features,
    /// The sanitizer it declares (any `i32`).
    pub sanitizer: Sanitizer,
}

/// Which functions a v0 table provides (non-NULL pointers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoints {
    /// `load` is non-NULL.
    pub load: bool,
    /// `unload` is non-NULL (a plugin without state may leave it NULL).
    pub unload: bool,
    /// `resolve` is non-NULL.
    pub resolve: bool,
}

/// Why [`RawTable::load`] gave no instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RawLoadError {
    /// The table's `load` or `resolve` pointer is NULL: nothing was called.
    #[error("the plugin's v0 table has a NULL `{function}` function")]
    MissingFunction {
        /// `load` or `resolve`.
        function: &'static str,
    },
    /// The plugin's `load` returned this status code (it was not unloaded).
    #[error("the plugin's load returned {code}")]
    Refused {
        /// The code `load` returned.
        code: StatusCode,
    },
}

/// A copy of a plugin's v0 table, from [`RawQuery::query`].
#[derive(Clone, Copy)]
pub struct RawTable<'code> {
    table: PluginV0,
    /// As [`RawQuery`]'s.
    image: Option<&'code ReadableRanges>,
    _code: PhantomData<&'code ()>,
}

impl std::fmt::Debug for RawTable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTable").field("entry_points", &self.entry_points()).finish_non_exhaustive()
    }
}

impl<'code> RawTable<'code> {
    /// The header the table points to, copied; `None` for a NULL header
    /// pointer.
    ///
    /// For a table of an embedded ELF image ([`RawQuery::in_image`]), the
    /// header must lie inside the image's readable segments and each
    /// non-NULL string must start and end (its NUL) inside one of them,
    /// else nothing is read through the pointer and the error says which.
    ///
    /// # Errors
    /// [`Incompatibility::HeaderOutsideImage`] or
    /// [`Incompatibility::HeaderStringOutsideImage`], for embedded ELF
    /// images only.
    pub fn header(&self) -> Result<Option<RawHeader>, Incompatibility> {
        if self.table.header.is_null() {
            return Ok(None);
        }
        let address = self.table.header as usize;
        if let Some(image) = self.image
            && !image.contains(address, std::mem::size_of::<Header>())
        {
            return Err(Incompatibility::HeaderOutsideImage { address });
        }
        // SAFETY: a non-NULL header pointer of a v0 table points to the
        // plugin's immutable header, valid for `'code` (the query contract;
        // for an image, checked just above to lie inside it).
        let header: Header = unsafe { self.table.header.read() };
        let string = |field: &'static str, pointer: *const c_char| match self.image {
            None => {
                // SAFETY: header strings are NULL or NUL-terminated (the v0
                // query contract of `RawQuery::new`).
                Ok(unsafe { c_string(pointer) })
            }
            Some(_) if pointer.is_null() => Ok(None),
            Some(image) => {
                // SAFETY: the image stays mapped for `'code`.
                let bytes = unsafe { image.c_string_at(pointer as usize) }
                    .ok_or(Incompatibility::HeaderStringOutsideImage { field, address: pointer as usize })?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
        };
        Ok(Some(RawHeader {
            version: header.version,
            name: string("name", header.name)?,
            description: string("description", header.description)?,
            features: header.features,
            sanitizer: header.sanitizer,
        }))
    }

    /// Which of `load`, `unload` and `resolve` the table provides.
    #[must_use]
    pub fn entry_points(&self) -> EntryPoints {
        EntryPoints {
            load: self.table.load.is_some(),
            unload: self.table.unload.is_some(),
            resolve: self.table.resolve.is_some(),
        }
    }

    /// Calls the plugin's `load` with `allocator` as the host allocator and
    /// `params` as its parameters (NULL and 0 when there are none); both
    /// the environment and the parameters are valid only during the call.
    ///
    /// # Errors
    /// [`RawLoadError::MissingFunction`] when `load` or `resolve` is NULL
    /// (nothing is called), [`RawLoadError::Refused`] with the code `load`
    /// returned. A refused `load` produces no instance, so `unload` is
    /// never called for it.
    pub fn load(
        &self,
        allocator: &Arc<CountingAllocator>,
        params: &LoadParamList,
    ) -> Result<RawInstance<'code>, RawLoadError> {
        let Some(load) = self.table.load else {
            return Err(RawLoadError::MissingFunction { function: "load" });
        };
        let Some(resolve) = self.table.resolve else {
            return Err(RawLoadError::MissingFunction { function: "resolve" });
        };
        let environment = EnvironmentV0 { host_allocator: allocator.abi() };
        let pairs = params.as_string_pairs();
        let pairs_ptr = if pairs.is_empty() { std::ptr::null() } else { pairs.as_ptr() };
        let mut state = std::ptr::null_mut();
        stage::enter(Stage::Load);
        // SAFETY: `load` is the table's non-NULL v0 load function (valid for
        // `'code`); the environment, the `pairs.len()` pairs (borrowing
        // `params`) and `state` outlive the call; the allocator's `self`
        // is kept alive by the instance until after its unload.
        let status = unsafe { load(&environment, pairs.len(), pairs_ptr, &mut state) };
        if !status.is_ok() {
            return Err(RawLoadError::Refused { code: status.code() });
        }
        Ok(RawInstance::new(resolve, self.table.unload, state, Arc::clone(allocator)))
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
