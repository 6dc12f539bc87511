//! The resolve request: import names plus the two slot arrays.

use std::ffi::{CStr, c_char, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;

use xplug_abi::{ImportFn, Resolution, ResolveParamsV0};

use crate::{Error, ProviderName};

/// One import name as an executable declares it: a NUL-terminated string,
/// optionally prefixed with `?` (optional import).
///
/// `#[repr(transparent)]` over a non-null C string pointer, so a C array of
/// names can be viewed as `&[SymbolName]` without copying or measuring the
/// strings.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SymbolName<'a> {
    ptr: NonNull<c_char>,
    _borrow: PhantomData<&'a CStr>,
}

// SAFETY: a `SymbolName` is a shared borrow of an immutable C string, like
// `&CStr`, which is `Send` and `Sync`.
unsafe impl Send for SymbolName<'_> {}
// SAFETY: as above.
unsafe impl Sync for SymbolName<'_> {}

impl<'a> SymbolName<'a> {
    /// A name borrowed from a Rust C string.
    #[must_use]
    pub const fn new(name: &'a CStr) -> Self {
        // SAFETY: `CStr::as_ptr` is never null.
        Self { ptr: unsafe { NonNull::new_unchecked(name.as_ptr().cast_mut()) }, _borrow: PhantomData }
    }

    /// The raw pointer to the first byte (possibly `?`).
    #[must_use]
    pub const fn as_ptr(self) -> *const c_char {
        self.ptr.as_ptr()
    }

    /// The full name, `?` included.
    #[must_use]
    pub fn as_c_str(self) -> &'a CStr {
        // SAFETY: constructed from a `&'a CStr` or, through the unsafe
        // constructors, from a pointer the caller promised is a valid
        // NUL-terminated string for `'a`.
        unsafe { CStr::from_ptr(self.ptr.as_ptr()) }
    }

    /// True when the name starts with `?`.
    #[must_use]
    pub fn is_optional(self) -> bool {
        // SAFETY: a valid C string has at least its NUL byte, so reading the
        // first byte is in bounds.
        unsafe { *self.ptr.as_ptr() == b'?' as c_char }
    }

    /// The name to look up: without the `?` and without the NUL.
    #[must_use]
    pub fn bare(self) -> &'a [u8] {
        xplug_abi::bare_name(self.as_c_str().to_bytes())
    }
}

impl std::fmt::Debug for SymbolName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_c_str())
    }
}

/// What a request knows of its function slots. One word wide, not a
/// `bool`: a request is moved whole (out of the `Result` its constructor
/// returns), and a one-byte flag stored just before such a move, followed by
/// seven bytes of padding, is read back as one eight-byte word, which the
/// processor cannot forward from the one-byte store (a stall of some ten
/// cycles on every resolve).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
enum Slots {
    /// Every slot is empty.
    KnownEmpty = 0,
    /// Some slot may hold a function.
    MaybeFilled = 1,
}

impl Slots {
    /// `MaybeFilled` when `filled`.
    #[inline(always)]
    fn known(filled: bool) -> Self {
        if filled { Self::MaybeFilled } else { Self::KnownEmpty }
    }

    /// What a scan of `fns` learns: one OR over the slots, with no early
    /// exit (it vectorises, and a fresh request, the usual one, is read to
    /// the end anyway).
    #[inline(always)]
    fn scan(fns: &[*mut c_void]) -> Self {
        Self::known(fns.iter().fold(0, |bits, function| bits | function.addr()) != 0)
    }
}

/// A batch of imports to resolve: names and the function/context slots to fill.
///
/// Semantics every provider follows (`docs/src/reference/resolution.md#provider-rules`): a
/// slot whose function pointer is already set is skipped and never
/// overwritten; names starting with `?` are optional and matched without the
/// `?`; a provider fills what it can.
///
/// ```
/// use std::ffi::c_void;
/// use xplug_providers::{ResolveRequest, SymbolName};
///
/// let names = [SymbolName::new(c"add"), SymbolName::new(c"?mul")];
/// let mut fns = [std::ptr::null_mut::<c_void>(); 2];
/// let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
/// let request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
/// assert_eq!(request.len(), 2);
/// assert_eq!(request.missing_required().count(), 1);
/// ```
pub struct ResolveRequest<'a> {
    /// The request as the v0 ABI passes it, so a plugin's `resolve` is
    /// handed this very struct. Invariant, set by every constructor: the
    /// three pointers are non-NULL and aligned (dangling when `count` is 0),
    /// `symbol_names` points at `count` names borrowed for `'a`, and the two
    /// slot arrays at `count` slots each, borrowed exclusively for `'a`.
    params: ResolveParamsV0,
    /// [`Slots::KnownEmpty`] only while every slot is known to be empty
    /// (after `clear`, or when built over empty slots, until anything may
    /// have written them): lets [`ResolveRequest::any_filled`] answer
    /// without a scan.
    slots: Slots,
    _borrow: PhantomData<(&'a [SymbolName<'a>], &'a mut [*mut c_void])>,
}

impl std::fmt::Debug for ResolveRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolveRequest")
            .field("names", &self.names())
            .field("fns", &self.fns())
            .field("contexts", &self.contexts())
            .finish_non_exhaustive()
    }
}

impl<'a> ResolveRequest<'a> {
    /// A request over Rust slices.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] when the three slices differ in length.
    #[inline]
    pub fn new(
        names: &'a [SymbolName<'a>],
        fns: &'a mut [*mut c_void],
        contexts: &'a mut [*mut c_void],
    ) -> Result<Self, Error> {
        if names.len() != fns.len() || names.len() != contexts.len() {
            return Err(unequal_lengths(names.len(), fns.len(), contexts.len()));
        }
        Ok(Self::from_slices(names, fns, contexts))
    }

    /// The request over three slices of one length, its slots scanned once
    /// so that a fresh request is known empty.
    #[inline(always)]
    fn from_slices(
        names: &'a [SymbolName<'a>],
        fns: &'a mut [*mut c_void],
        contexts: &'a mut [*mut c_void],
    ) -> Self {
        debug_assert!(names.len() == fns.len() && names.len() == contexts.len());
        let count = names.len().min(fns.len()).min(contexts.len());
        let slots = Slots::scan(fns);
        Self {
            params: ResolveParamsV0 {
                count,
                symbol_names: names.as_ptr().cast(),
                out_fn_ptrs: fns.as_mut_ptr(),
                out_fn_contexts: contexts.as_mut_ptr(),
            },
            slots,
            _borrow: PhantomData,
        }
    }

    /// A request with nothing to resolve.
    #[inline(always)]
    fn empty() -> Self {
        Self {
            params: ResolveParamsV0 {
                count: 0,
                symbol_names: NonNull::dangling().as_ptr(),
                out_fn_ptrs: NonNull::dangling().as_ptr(),
                out_fn_contexts: NonNull::dangling().as_ptr(),
            },
            slots: Slots::KnownEmpty,
            _borrow: PhantomData,
        }
    }

    /// A request over raw C arrays, as a C host passes them.
    ///
    /// # Safety
    /// When `count > 0`: `names`, `fns` and `contexts` each point to `count`
    /// initialised elements that stay valid (and, for the slots, unaliased)
    /// for `'a`; every name is a non-null, NUL-terminated string valid for
    /// `'a`. When `count == 0` the pointers are not read and may be NULL.
    ///
    /// # Thread-safety
    /// The slots must not be written by anyone else while the request lives.
    #[inline]
    pub unsafe fn from_raw(
        count: usize,
        names: *const *const c_char,
        fns: *mut *mut c_void,
        contexts: *mut *mut c_void,
    ) -> Self {
        if count == 0 {
            return Self::empty();
        }
        // SAFETY: the caller guarantees `count` valid, non-null name pointers;
        // `SymbolName` is `repr(transparent)` over a non-null pointer.
        let names = unsafe { std::slice::from_raw_parts(names.cast::<SymbolName<'a>>(), count) };
        // SAFETY: the caller guarantees `count` writable, unaliased slots.
        let fns = unsafe { std::slice::from_raw_parts_mut(fns, count) };
        // SAFETY: as above.
        let contexts = unsafe { std::slice::from_raw_parts_mut(contexts, count) };
        // The scan makes a fresh request from C (IREE's loaders zero their
        // slots) known empty: the walk's filled-slot checks are then free
        // until a provider writes.
        Self::from_slices(names, fns, contexts)
    }

    /// A request over the arrays a C caller passed to a provider's
    /// `resolve`, checked first: the three arrays must be non-NULL when
    /// `count > 0`, and so must every name. The one check of C arguments
    /// every C-facing provider shares (the manager's C view, `xplug-iree`);
    /// one pass over the names and the function slots both checks the names
    /// and learns whether any slot is filled.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming what is NULL.
    ///
    /// # Safety
    /// As [`ResolveRequest::from_raw`], except that the three arrays and the
    /// names may be NULL (that is what is checked).
    #[inline(always)]
    pub unsafe fn from_c_arrays(
        count: usize,
        names: *const *const c_char,
        fns: *mut *mut c_void,
        contexts: *mut *mut c_void,
    ) -> Result<Self, Error> {
        if count == 0 {
            return Ok(Self::empty());
        }
        if names.is_null() || fns.is_null() || contexts.is_null() {
            return Err(null_argument("the names, functions or contexts array is NULL"));
        }
        // SAFETY: non-NULL, and the caller passes `count` name pointers.
        let pointers = unsafe { std::slice::from_raw_parts(names, count) };
        // SAFETY: non-NULL, and the caller passes `count` writable,
        // unaliased slots.
        let fns = unsafe { std::slice::from_raw_parts_mut(fns, count) };
        // The usual request (every name set, every slot empty) passes in
        // one short loop that stops at the first exception; a NULL name or
        // a filled slot is then sorted out off the hot path.
        let usual = pointers
            .iter()
            .zip(fns.iter())
            .position(|(name, function)| name.is_null() || !function.is_null());
        let filled = match usual {
            None => false,
            Some(first) => unusual_c_arrays(pointers, fns, first)?,
        };
        // The arrays are non-NULL (checked above) and hold `count` elements
        // each by the caller's word; every name is non-NULL (checked above)
        // and NUL-terminated: the struct's invariant.
        let params = ResolveParamsV0 {
            count,
            symbol_names: names,
            out_fn_ptrs: fns.as_mut_ptr(),
            out_fn_contexts: contexts,
        };
        Ok(Self { params, slots: Slots::known(filled), _borrow: PhantomData })
    }

    /// A request over a v0 resolve-params struct.
    ///
    /// # Safety
    /// As [`ResolveRequest::from_raw`] for the struct's fields.
    pub unsafe fn from_params(params: &ResolveParamsV0) -> Self {
        // SAFETY: forwarded to the caller.
        unsafe {
            Self::from_raw(params.count, params.symbol_names, params.out_fn_ptrs, params.out_fn_contexts)
        }
    }

    /// The request as a v0 params struct, for passing to a C `resolve`.
    /// The pointers borrow from `self`.
    #[must_use]
    #[inline]
    pub fn as_params(&mut self) -> ResolveParamsV0 {
        *self.params_for_call()
    }

    /// The v0 params struct the request is, to pass by pointer to a
    /// foreign `resolve` (no copy is made). The pointers borrow from `self`.
    #[inline(always)]
    pub(crate) fn params_for_call(&mut self) -> &ResolveParamsV0 {
        // Foreign code may write the slots through these pointers.
        self.slots = Slots::MaybeFilled;
        &self.params
    }

    /// The function slots.
    #[inline(always)]
    fn fns(&self) -> &[*mut c_void] {
        // SAFETY: the struct's invariant: `count` slots, borrowed
        // exclusively by the request, non-NULL and aligned.
        unsafe { std::slice::from_raw_parts(self.params.out_fn_ptrs, self.params.count) }
    }

    /// The function slots, to write.
    #[inline(always)]
    fn fns_mut(&mut self) -> &mut [*mut c_void] {
        // SAFETY: as in `fns`; `&mut self` makes this the only live view.
        unsafe { std::slice::from_raw_parts_mut(self.params.out_fn_ptrs, self.params.count) }
    }

    /// The context slots.
    #[inline(always)]
    fn contexts(&self) -> &[*mut c_void] {
        // SAFETY: as in `fns`, for the context array.
        unsafe { std::slice::from_raw_parts(self.params.out_fn_contexts, self.params.count) }
    }

    /// The context slots, to write.
    #[inline(always)]
    fn contexts_mut(&mut self) -> &mut [*mut c_void] {
        // SAFETY: as in `fns_mut`, for the context array.
        unsafe { std::slice::from_raw_parts_mut(self.params.out_fn_contexts, self.params.count) }
    }

    /// Number of imports.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.params.count
    }

    /// True when there is nothing to resolve.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.params.count == 0
    }

    /// The names, in request order.
    #[must_use]
    pub fn names(&self) -> &'a [SymbolName<'a>] {
        // SAFETY: the struct's invariant: `count` names borrowed for `'a`,
        // non-NULL and aligned; `SymbolName` is `repr(transparent)` over a
        // non-null C string pointer.
        unsafe {
            std::slice::from_raw_parts(self.params.symbol_names.cast::<SymbolName<'a>>(), self.params.count)
        }
    }

    /// True when slot `index` already holds a function.
    ///
    /// # Panics
    /// When `index >= self.len()`.
    #[must_use]
    pub fn is_filled(&self, index: usize) -> bool {
        !self.fns()[index].is_null()
    }

    /// The function pointer in slot `index` (NULL when empty).
    #[must_use]
    pub fn function(&self, index: usize) -> *mut c_void {
        self.fns()[index]
    }

    /// The context in slot `index`.
    #[must_use]
    pub fn context(&self, index: usize) -> *mut c_void {
        self.contexts()[index]
    }

    /// Fills slot `index` with `function` and `context` unless it is already
    /// filled; returns whether it wrote. A filled slot is never overwritten.
    ///
    /// # Panics
    /// When `index >= self.len()`.
    pub fn fill(&mut self, index: usize, function: ImportFn, context: *mut c_void) -> bool {
        self.fill_untyped(index, function as *mut c_void, context)
    }

    /// [`ResolveRequest::fill`] with an untyped function pointer, for
    /// providers that hand out pointers they received from foreign code.
    /// A NULL `function` writes nothing.
    ///
    /// # Panics
    /// When `index >= self.len()`.
    pub fn fill_untyped(&mut self, index: usize, function: *mut c_void, context: *mut c_void) -> bool {
        if !self.fns()[index].is_null() || function.is_null() {
            return false;
        }
        self.fns_mut()[index] = function;
        self.contexts_mut()[index] = context;
        self.slots = Slots::MaybeFilled;
        true
    }

    /// Replaces what filled slot `index` holds with `function` and
    /// `context`, and returns the pair it held (`None`, writing nothing, for
    /// an empty slot).
    ///
    /// This is for the host, after every provider has answered, to put a
    /// wrapper of its own between the executable and the resolved function
    /// (xplug's per-import profiles, `docs/src/operating/profiles.md`); a provider never
    /// overwrites a filled slot (`docs/src/reference/resolution.md#provider-rules`) and
    /// has no use for it. The wrapper is then responsible for calling the
    /// pair it was given.
    ///
    /// ```
    /// use std::ffi::c_void;
    /// use xplug_providers::{ResolveRequest, SymbolName};
    ///
    /// unsafe extern "C" fn plugin(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 { 0 }
    /// unsafe extern "C" fn wrapper(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 { 0 }
    /// let names = [SymbolName::new(c"a"), SymbolName::new(c"?b")];
    /// let mut fns = [plugin as *mut c_void, std::ptr::null_mut()];
    /// let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
    /// let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    /// let mut held = 7u8;
    /// let context = (&raw mut held).cast::<c_void>();
    /// assert_eq!(request.wrap_filled(0, wrapper, context), Some((plugin as *mut c_void, std::ptr::null_mut())));
    /// assert_eq!(request.wrap_filled(1, wrapper, context), None, "an empty slot stays empty");
    /// assert_eq!((request.function(0), request.context(0)), (wrapper as *mut c_void, context));
    /// ```
    ///
    /// # Panics
    /// When `index >= self.len()`.
    pub fn wrap_filled(
        &mut self,
        index: usize,
        function: ImportFn,
        context: *mut c_void,
    ) -> Option<(*mut c_void, *mut c_void)> {
        let held = (self.fns()[index], self.contexts()[index]);
        if held.0.is_null() {
            return None;
        }
        self.fns_mut()[index] = function as *mut c_void;
        self.contexts_mut()[index] = context;
        Some(held)
    }

    /// Calls `call` (typically a provider's resolve) on this request and
    /// holds it to the first provider rule (`docs/src/reference/resolution.md#provider-rules`):
    /// every slot that was filled before the call and that `call` changed
    /// (function or context rewritten, or cleared) is put back as it was,
    /// and `rewritten(index)` is told about each. Slots that were empty
    /// keep whatever `call` wrote into them.
    ///
    /// Safe Rust cannot break the rule ([`ResolveRequest::fill`] never
    /// overwrites); foreign code writing through [`ResolveRequest::as_params`]
    /// can, and a host that lets foreign providers run wraps each call in
    /// this. A request with no filled slot is passed to `call` as it is,
    /// after one check; otherwise the slots are copied before the call and
    /// compared after it, into a buffer the request keeps for its next
    /// calls.
    ///
    /// ```
    /// use std::ffi::c_void;
    /// use xplug_providers::{ResolveRequest, SymbolName};
    ///
    /// unsafe extern "C" fn f(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 { 0 }
    /// let names = [SymbolName::new(c"a"), SymbolName::new(c"b")];
    /// let mut fns = [f as *mut c_void, std::ptr::null_mut()];
    /// let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
    /// let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    /// let mut rewritten = Vec::new();
    /// request.protect_filled(
    ///     |request| {
    ///         let params = request.as_params();
    ///         // SAFETY: both slots exist; a careless foreign provider
    ///         // writes every slot, filled or not.
    ///         unsafe {
    ///             *params.out_fn_ptrs = std::ptr::null_mut();
    ///             *params.out_fn_ptrs.add(1) = f as *mut c_void;
    ///         }
    ///     },
    ///     |slot| rewritten.push(slot),
    /// );
    /// assert_eq!(rewritten, [0]);
    /// assert!(request.is_filled(0) && request.is_filled(1));
    /// ```
    #[inline(always)]
    pub fn protect_filled<R>(
        &mut self,
        call: impl FnOnce(&mut Self) -> R,
        rewritten: impl FnMut(usize),
    ) -> R {
        if !self.any_filled() {
            return call(self);
        }
        self.protect_filled_slots(call, rewritten)
    }

    /// [`ResolveRequest::protect_filled`] for a request with a filled slot.
    #[inline(never)]
    fn protect_filled_slots<R>(
        &mut self,
        call: impl FnOnce(&mut Self) -> R,
        mut rewritten: impl FnMut(usize),
    ) -> R {
        let len = self.len();
        // The slots as they were (functions, then contexts): on the stack
        // for the usual handful of imports, on the heap beyond.
        let mut inline = [std::ptr::null_mut(); 2 * SAVED_INLINE];
        let mut heap = Vec::new();
        let saved: &mut [*mut c_void] = if len <= SAVED_INLINE {
            &mut inline[..2 * len]
        } else {
            heap.resize(2 * len, std::ptr::null_mut());
            &mut heap
        };
        let (fns, contexts) = saved.split_at_mut(len);
        fns.copy_from_slice(self.fns());
        contexts.copy_from_slice(self.contexts());
        let result = call(self);
        for index in 0..len {
            if !fns[index].is_null()
                && (self.fns()[index] != fns[index] || self.contexts()[index] != contexts[index])
            {
                self.fns_mut()[index] = fns[index];
                self.contexts_mut()[index] = contexts[index];
                rewritten(index);
            }
        }
        // Filled slots are back, whatever `call` did (a `clear` included).
        self.slots = Slots::MaybeFilled;
        result
    }

    /// Whether any slot holds a function.
    #[must_use]
    #[inline]
    pub fn any_filled(&self) -> bool {
        if self.slots == Slots::KnownEmpty {
            return false;
        }
        // Short requests (most executables import a handful of functions):
        // a plain scan, with no block set-up.
        let fns = self.fns();
        if fns.len() < 16 {
            return fns.iter().any(|f| !f.is_null());
        }
        any_filled_blocks(fns)
    }

    /// Empties every slot (functions and contexts), so the same request can
    /// be resolved again without being rebuilt (benchmarks, retries).
    #[inline]
    pub fn clear(&mut self) {
        self.fns_mut().fill(std::ptr::null_mut());
        self.contexts_mut().fill(std::ptr::null_mut());
        self.slots = Slots::KnownEmpty;
    }

    /// Indices of required (non-`?`) names whose slot is still empty.
    #[inline]
    pub fn missing_required(&self) -> impl Iterator<Item = usize> + '_ {
        let (names, fns) = (self.names(), self.fns());
        (0..self.len()).filter(move |&i| fns[i].is_null() && !names[i].is_optional())
    }

    /// True when at least one optional name's slot is still empty.
    #[must_use]
    pub fn any_optional_missing(&self) -> bool {
        let (names, fns) = (self.names(), self.fns());
        (0..self.len()).any(|i| fns[i].is_null() && names[i].is_optional())
    }

    /// True when every slot is filled.
    #[must_use]
    #[inline]
    pub fn all_filled(&self) -> bool {
        let fns = self.fns();
        if fns.len() < 16 {
            return fns.iter().all(|f| !f.is_null());
        }
        all_filled_blocks(fns)
    }

    /// The outcome the slots show, judged exactly as
    /// `docs/src/reference/resolution.md#provider-rules` judges a provider's answer:
    /// `NotFound` if a required slot is empty, otherwise OK with
    /// [`Resolution::MISSING_OPTIONAL`] iff an optional slot is empty.
    ///
    /// `provider` is only converted into a [`ProviderName`] when the answer is
    /// `NotFound`, so passing `&name` costs nothing on success.
    ///
    /// # Errors
    /// [`Error::NotFound`] naming `provider` and the number of empty required slots.
    pub fn outcome(&self, provider: impl Into<ProviderName>) -> Result<Resolution, Error> {
        let missing = self.missing_required().count();
        if missing > 0 {
            return Err(Error::NotFound { provider: provider.into(), missing });
        }
        Ok(if self.any_optional_missing() { Resolution::MISSING_OPTIONAL } else { Resolution::NONE })
    }

    /// True when the names are in non-decreasing order of bare name (the
    /// order IREE's compiler emits). Providers may use this to pick a merge
    /// walk; they must still be correct when it is false.
    #[must_use]
    pub fn is_sorted_by_bare_name(&self) -> bool {
        self.names().windows(2).all(|pair| pair[0].bare() <= pair[1].bare())
    }
}

/// The storage of a [`ResolveRequest`] a Rust caller builds from names it
/// holds as C strings: the [`SymbolName`] views and the two slot arrays,
/// owned, always of equal length.
///
/// ```
/// use xplug_providers::RequestSlots;
///
/// let names = [c"add", c"?mul"];
/// let mut slots = RequestSlots::for_names(names);
/// assert_eq!(slots.request().missing_required().count(), 1);
/// assert!(slots.fns().iter().all(|f| f.is_null()));
/// ```
#[derive(Debug)]
pub struct RequestSlots<'a> {
    names: Vec<SymbolName<'a>>,
    fns: Vec<*mut c_void>,
    contexts: Vec<*mut c_void>,
}

impl<'a> RequestSlots<'a> {
    /// Empty slots for `names`, in the given order.
    pub fn for_names<S>(names: impl IntoIterator<Item = &'a S>) -> Self
    where
        S: AsRef<CStr> + ?Sized + 'a,
    {
        let names: Vec<SymbolName<'a>> =
            names.into_iter().map(|name| SymbolName::new(name.as_ref())).collect();
        let count = names.len();
        Self { names, fns: vec![std::ptr::null_mut(); count], contexts: vec![std::ptr::null_mut(); count] }
    }

    /// A request over these names and slots, for one resolve.
    pub fn request(&mut self) -> ResolveRequest<'_> {
        ResolveRequest::from_slices(&self.names, &mut self.fns, &mut self.contexts)
    }

    /// Number of names (and of slots in each array).
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are no names.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The function slots, one per name.
    #[must_use]
    pub fn fns(&self) -> &[*mut c_void] {
        &self.fns
    }

    /// The context slots, one per name.
    #[must_use]
    pub fn contexts(&self) -> &[*mut c_void] {
        &self.contexts
    }

    /// Sets every slot to `function` and `context` (NULL and NULL empties
    /// them all, so the next request resolves from scratch).
    pub fn fill_all(&mut self, function: *mut c_void, context: *mut c_void) {
        self.fns.fill(function);
        self.contexts.fill(context);
    }

    /// The function and context slots, ending the borrow of the names.
    #[must_use]
    pub fn into_slots(self) -> (Vec<*mut c_void>, Vec<*mut c_void>) {
        (self.fns, self.contexts)
    }
}

/// Requests up to this long save their slots on the stack in
/// [`ResolveRequest::protect_filled`].
const SAVED_INLINE: usize = 16;

/// The error of [`ResolveRequest::new`] over slices of unequal lengths
/// (out of line: building it is the cold path of an inlined constructor).
#[cold]
#[inline(never)]
fn unequal_lengths(names: usize, fns: usize, contexts: usize) -> Error {
    Error::InvalidRequest {
        reason: format!("{names} names but {fns} function slots and {contexts} context slots"),
    }
}

/// A C caller's names and slots from `first`, the first NULL name or
/// filled slot, on: refused for a NULL name, otherwise whether a slot is filled
/// (it is: that is why the scan stopped, unless the name was NULL).
#[cold]
#[inline(never)]
fn unusual_c_arrays(names: &[*const c_char], fns: &[*mut c_void], first: usize) -> Result<bool, Error> {
    if names.iter().skip(first).any(|name| name.is_null()) {
        return Err(null_argument("a symbol name is NULL"));
    }
    Ok(fns.iter().skip(first).any(|function| !function.is_null()))
}

/// The error of [`ResolveRequest::from_c_arrays`] for a NULL argument.
#[cold]
#[inline(never)]
fn null_argument(what: &str) -> Error {
    Error::InvalidRequest { reason: format!("resolve called with invalid arguments: {what}") }
}

/// [`ResolveRequest::all_filled`] for longer requests: blocks of 32 slots
/// tested without branches (the compiler vectorises the fold), with an exit
/// after the first block holding an empty slot, so a fresh request answers
/// at its first block and a fully resolved one costs one pass.
///
/// That pass is the price of judging a resolve from the slots rather than
/// from the plugin's word, paid on every resolve. It is compiled for the
/// baseline target only: run-time dispatch to AVX2 was measured to save
/// 4 to 20 ns over 128 to 512 slots (nothing below 128), under 1 % of any
/// resolve of that many names.
#[inline(never)]
fn all_filled_blocks(fns: &[*mut c_void]) -> bool {
    let mut blocks = fns.chunks_exact(32);
    for block in &mut blocks {
        if block.iter().fold(false, |empty, f| empty | f.is_null()) {
            return false;
        }
    }
    !blocks.remainder().iter().fold(false, |empty, f| empty | f.is_null())
}

/// [`ResolveRequest::any_filled`] for 16 slots or more, out of the hot
/// path: blocks of 16 OR-ed without branches vectorise, and an empty request
/// (the common case before the first provider) costs one pass.
#[inline(never)]
fn any_filled_blocks(fns: &[*mut c_void]) -> bool {
    let mut blocks = fns.chunks_exact(16);
    for block in &mut blocks {
        if block.iter().fold(0usize, |bits, f| bits | f.addr()) != 0 {
            return true;
        }
    }
    blocks.remainder().iter().any(|f| !f.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request built over `RequestSlots` sees the slots it holds, and
    /// what a resolve writes stays there.
    #[test]
    fn request_slots_hold_what_a_request_writes() {
        let names = [c"a".to_owned(), c"?b".to_owned()];
        let mut slots = RequestSlots::for_names(&names);
        assert_eq!(slots.len(), 2);
        let filled = std::ptr::dangling_mut::<c_void>();
        {
            let mut request = slots.request();
            assert!(!request.any_filled());
            assert!(request.fill_untyped(0, filled, filled));
        }
        assert_eq!(slots.fns(), [filled, std::ptr::null_mut()]);
        assert!(slots.request().any_filled());
        slots.fill_all(std::ptr::null_mut(), std::ptr::null_mut());
        assert!(!slots.request().any_filled());
        let (fns, contexts) = slots.into_slots();
        assert_eq!((fns.len(), contexts.len()), (2, 2));
    }

    /// `check_c_arrays` refuses NULL arrays and names when there are names,
    /// accepts anything for zero names, and passes valid arrays.
    #[test]
    fn c_arrays_are_checked_before_use() {
        let names = [c"a".as_ptr(), std::ptr::null()];
        let filled = std::ptr::dangling_mut::<c_void>();
        let mut fns = [filled, std::ptr::null_mut()];
        let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
        let (f, c) = (fns.as_mut_ptr(), contexts.as_mut_ptr());
        // SAFETY: two-element arrays; the NULL name is what is tested.
        let error = unsafe { ResolveRequest::from_c_arrays(2, names.as_ptr(), f, c) }.unwrap_err();
        assert!(error.to_string().contains("a symbol name is NULL"), "{error}");
        // SAFETY: one-element arrays but the NULL one, which is tested.
        let error = unsafe { ResolveRequest::from_c_arrays(1, names.as_ptr(), std::ptr::null_mut(), c) };
        assert!(error.unwrap_err().to_string().contains("array is NULL"));
        // SAFETY: zero names: the pointers are not read.
        let empty = unsafe {
            ResolveRequest::from_c_arrays(0, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut())
        };
        assert!(empty.is_ok_and(|request| request.is_empty()));
        // SAFETY: the first element of each array, a valid name, its slot
        // filled: the request sees it.
        let request = unsafe { ResolveRequest::from_c_arrays(1, names.as_ptr(), f, c) }.expect("valid");
        assert!(request.any_filled() && request.all_filled());
        // SAFETY: the second slot alone, empty, under the valid name.
        let request =
            unsafe { ResolveRequest::from_c_arrays(1, names.as_ptr(), f.add(1), c) }.expect("valid");
        assert!(!request.any_filled());
        // A filled slot after empty ones, and a NULL name after a filled
        // slot: both are found past the point where the usual scan stops.
        let two = [c"a".as_ptr(), c"b".as_ptr()];
        let mut later = [std::ptr::null_mut(), filled];
        // SAFETY: two-element arrays of valid names and slots.
        let request =
            unsafe { ResolveRequest::from_c_arrays(2, two.as_ptr(), later.as_mut_ptr(), c) }.expect("valid");
        assert!(request.any_filled() && !request.all_filled());
        let null_later = [c"a".as_ptr(), std::ptr::null()];
        let mut first_filled = [filled, std::ptr::null_mut()];
        // SAFETY: two-element arrays; the NULL second name is what is tested.
        let error =
            unsafe { ResolveRequest::from_c_arrays(2, null_later.as_ptr(), first_filled.as_mut_ptr(), c) };
        assert!(error.unwrap_err().to_string().contains("a symbol name is NULL"));
    }

    /// `protect_filled` restores exactly the slots that were filled, even
    /// after a `clear` inside the call, and says which; the request keeps
    /// knowing that slots are filled.
    #[test]
    fn protect_filled_restores_filled_slots_only() {
        let names = vec![SymbolName::new(c"f"); 40];
        let kept = std::ptr::dangling_mut::<c_void>();
        let mut fns = vec![std::ptr::null_mut::<c_void>(); 40];
        let mut contexts = vec![std::ptr::null_mut::<c_void>(); 40];
        fns[3] = kept;
        contexts[3] = kept;
        fns[39] = kept;
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
        let other = kept.wrapping_byte_add(8);
        let mut rewritten = Vec::new();
        request.protect_filled(
            |request| {
                request.clear();
                request.fill_untyped(0, other, other);
                request.fill_untyped(39, other, other);
            },
            |slot| rewritten.push(slot),
        );
        assert_eq!(rewritten, [3, 39]);
        assert_eq!((request.function(3), request.context(3)), (kept, kept));
        assert_eq!((request.function(39), request.context(39)), (kept, std::ptr::null_mut()));
        assert_eq!((request.function(0), request.context(0)), (other, other));
        assert!(request.any_filled());
        // Nothing filled: `call` runs as it is and nothing is reported.
        request.clear();
        let ran = request.protect_filled(|_| true, |_| panic!("no filled slot to rewrite"));
        assert!(ran);
    }

    /// `all_filled` and `any_filled` agree with a plain scan for every
    /// length around the block sizes and an empty slot at every position
    /// (the short scan, the block loop and its remainder).
    #[test]
    fn slot_scans_agree_with_a_plain_scan() {
        let name = SymbolName::new(c"f");
        for len in (0..=70).chain([95, 96, 97, 127, 128, 129, 4095, 4096, 4097]) {
            let names = vec![name; len];
            let filled = std::ptr::dangling_mut::<c_void>();
            for empty in std::iter::once(None).chain((0..len).map(Some)) {
                let mut fns: Vec<*mut c_void> =
                    (0..len).map(|i| if Some(i) == empty { std::ptr::null_mut() } else { filled }).collect();
                let mut contexts = vec![std::ptr::null_mut(); len];
                let request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
                assert_eq!(request.all_filled(), empty.is_none(), "len {len}, empty slot {empty:?}");
                assert_eq!(
                    request.any_filled(),
                    len > 1 || (len == 1 && empty.is_none()),
                    "len {len}, empty {empty:?}"
                );
            }
        }
    }
}
