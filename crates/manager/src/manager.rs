//! The manager: providers in registration order, resolved newest first.

use std::fmt;
use std::sync::Arc;

use xplug_providers::abi::Resolution;
use xplug_providers::{ImportProvider, ResolveRequest, SymbolName};
use xplug_swap::SwapHandle;

use crate::error::{Error, MissingImport};
use crate::registry::{Entry, Held, Registry};
use crate::suggest;

/// Composes import providers and plugins with IREE's resolution semantics.
///
/// Providers are kept in registration order and asked **newest first**, so a
/// later registration overrides an earlier one. [`Manager::resolve`]
/// implements `docs/src/reference/resolution.md#reference-model` exactly:
///
/// 1. a request with no names succeeds at once; no provider is called;
/// 2. providers are walked newest first, and the walk stops before calling a
///    provider once every slot is filled;
/// 3. a provider error whose code is neither OK nor `NOT_FOUND` ends the
///    resolve with [`Error::ProviderFailed`];
/// 4. otherwise (OK or `NOT_FOUND`) the walk continues;
/// 5. the outcome is judged from the slots, never from the providers'
///    statuses: an empty required slot gives [`Error::MissingImports`]
///    listing every one of them; otherwise the result is OK, with
///    [`Resolution::MISSING_OPTIONAL`] iff an optional slot is empty.
///
/// Registration takes `&self` and may run while other threads resolve;
/// resolution takes no lock (see the `registry` module documentation for the
/// argument). A resolve sees every provider whose registration finished
/// before the resolve began, and possibly some registered during it.
///
/// Plugins registered with `register_plugin` are owned by the manager and
/// dropped (unloaded) in reverse registration order when it is dropped.
///
/// ```
/// use std::ffi::c_void;
/// use std::sync::Arc;
/// use xplug_manager::Manager;
/// use xplug_manager::providers::abi::Resolution;
/// use xplug_manager::providers::{Error, ImportProvider, ResolveRequest, SymbolName};
///
/// /// Exports `one` function under one name.
/// struct One(&'static str);
/// unsafe extern "C" fn noop(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 { 0 }
/// impl ImportProvider for One {
///     fn name(&self) -> &str { self.0 }
///     fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
///         for i in 0..request.len() {
///             if request.names()[i].bare() == self.0.as_bytes() {
///                 request.fill(i, noop, std::ptr::null_mut());
///             }
///         }
///         request.outcome("one")
///     }
/// }
///
/// let manager = Manager::new();
/// manager.register_provider(Arc::new(One("a"))).unwrap();
/// manager.register_provider(Arc::new(One("b"))).unwrap();
/// assert_eq!(manager.providers(), ["b", "a"]); // scan order
///
/// let names = [SymbolName::new(c"a"), SymbolName::new(c"b"), SymbolName::new(c"?c")];
/// let mut fns = [std::ptr::null_mut(); 3];
/// let mut contexts = [std::ptr::null_mut(); 3];
/// let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
/// assert_eq!(manager.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
/// assert!(!fns[0].is_null() && !fns[1].is_null() && fns[2].is_null());
/// ```
///
/// # Methods
///
/// The one list of `Manager`'s public methods; each is documented where
/// it is defined, in the module of its concern:
///
/// | Concern | Methods | Module |
/// |---|---|---|
/// | making one | [`Manager::new`], [`Manager::builder`], [`Manager::capacity`]; a cheap-to-clone handle | `manager.rs`, `config.rs` |
/// | registering providers | [`Manager::register_provider`], [`Manager::register_plugin`], [`Manager::providers`], [`Manager::len`], [`Manager::is_empty`] | `manager.rs`, `loading.rs` |
/// | live swap | [`Manager::load_swappable`], then [`SwapHandle::replace`](crate::swap::SwapHandle::replace) | `loading.rs`, the `xplug-swap` crate |
/// | configuring (capacity, loaders, allow-list, static plugins, debugging aids) | [`Manager::builder`], [`Manager::new`] | `config.rs` |
/// | loading plugins | [`Manager::load_spec`], [`Manager::from_specs`], [`Manager::from_env`], [`Manager::loaders`], [`Manager::parse_spec`], [`Manager::allow_list`] | `loading.rs` |
/// | resolving | [`Manager::resolve`], [`Manager::resolve_traced`], [`Manager::resolve_imports`] (then [`ResolvedImports::typed`](crate::ResolvedImports::typed)) | `manager.rs`, `imports.rs`, `typed.rs` |
/// | C hosts | [`Manager::as_c_provider`] | `c_provider.rs` |
#[derive(Clone)]
pub struct Manager {
    /// What every clone shares.
    pub(crate) inner: Arc<Shared>,
}

/// A manager's state, shared by its clones.
pub(crate) struct Shared {
    pub(crate) registry: Registry,
    /// The loaders specs are offered to, in order
    /// ([`xplug_providers::loaders`] after any given to
    /// [`ManagerBuilder::loader`](crate::ManagerBuilder::loader)).
    pub(crate) loaders: Vec<&'static dyn xplug_providers::Loader>,
    /// The allow-list of
    /// [`ManagerBuilder::allow_only`](crate::ManagerBuilder::allow_only).
    pub(crate) allow_list: Option<Arc<xplug_providers::AllowList>>,
}

/// What a registration added to a [`Manager`]: where the provider sits in
/// the scan and the name it reports (what traces, errors and tools label it
/// with). Returned by [`Manager::register_plugin`],
/// [`Manager::register_provider`] and [`Manager::load_spec`], so a caller
/// that shows the providers it registered needs no list of its own.
#[derive(Clone)]
pub struct Registered {
    index: usize,
    name: Arc<str>,
    /// The handle of a plugin loaded as swappable.
    swap: Option<SwapHandle>,
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("index", &self.index)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Two registrations are equal when they name the same provider at the same
/// index.
impl PartialEq for Registered {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index && self.name == other.name
    }
}

impl Eq for Registered {}

impl Registered {
    pub(crate) fn new(index: usize, name: Arc<str>) -> Self {
        Self { index, name, swap: None }
    }

    /// This registration, carrying the handle of the swappable plugin it
    /// registered.
    pub(crate) fn with_swap(mut self, handle: SwapHandle) -> Self {
        self.swap = Some(handle);
        self
    }

    /// The handle of the plugin this registration names, when it was
    /// loaded from a `?swappable` spec ([`Manager::load_swappable`] returns
    /// it directly); `None` for any other registration.
    #[must_use]
    pub fn swap_handle(&self) -> Option<&SwapHandle> {
        self.swap.as_ref()
    }

    /// The registration index: 0 for the oldest provider; resolution asks
    /// the highest index first. The index [`SlotSource::Provider`]
    /// and [`SlotRewrite`] name.
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The provider's name (a plugin's header name), as
    /// [`Manager::providers`] lists it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Where the function in one slot of a traced resolve came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotSource {
    /// Still empty after the resolve (an optional import nobody exports).
    Empty,
    /// Already filled when the request came in; left untouched.
    Prefilled,
    /// Filled by the provider at `index` in registration order.
    Provider {
        /// Position in registration order (0 = oldest).
        index: usize,
        /// The provider's name.
        name: Arc<str>,
    },
}

/// What [`Manager::resolve_traced`] saw, for tooling: which provider filled
/// each slot and which providers were asked. It is complete whether the
/// resolve succeeded or not (a failed resolve still shows who filled what).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveTrace {
    /// Per slot, in request order, where its function came from.
    pub slots: Vec<SlotSource>,
    /// Registration indices of the providers called, in call order.
    pub called: Vec<usize>,
    /// Slots a provider rewrote after a newer provider (or the caller) had
    /// filled them; every such change was undone.
    pub rewrites: Vec<SlotRewrite>,
}

/// A provider changed a slot that was already filled; the manager put the
/// old function and context back (`docs/src/reference/resolution.md#provider-rules`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRewrite {
    /// The slot, in request order.
    pub slot: usize,
    /// Registration index of the provider that rewrote it.
    pub provider_index: usize,
    /// Its name.
    pub provider: Arc<str>,
}

/// Logs a provider's rewrite of a filled slot (undone).
#[cold]
#[inline(never)]
fn report_rewrite(name: SymbolName<'_>, slot: usize, index: usize, provider: &str) {
    tracing::warn!(
        provider,
        provider_index = index,
        slot,
        import = %name.as_c_str().to_string_lossy(),
        "provider #{index} `{provider}` rewrote import slot {slot} that was already filled; the change was \
         undone (a provider must skip filled slots)"
    );
}

/// What a resolve reports as it walks the providers. [`Manager::resolve`]
/// walks with [`Quiet`] unless a `tracing` subscriber wants its span, so
/// the walk a runtime pays for is the same code with every report compiled
/// away.
trait Observer {
    /// Provider `index` (`entry`) was called; `request` holds the slots
    /// after the call (rewrites of filled slots already undone).
    fn answered(&mut self, index: usize, entry: &Entry, request: &ResolveRequest<'_>);
    /// Provider `index` rewrote filled slot `slot`; the change was undone.
    fn rewrote(&mut self, slot: usize, index: usize, entry: &Entry);
    /// The resolve ended with `result`.
    fn finished(&mut self, result: &Result<Resolution, Error>);
}

/// Reports nothing.
struct Quiet;

impl Observer for Quiet {
    #[inline(always)]
    fn answered(&mut self, _: usize, _: &Entry, _: &ResolveRequest<'_>) {}
    #[inline(always)]
    fn rewrote(&mut self, _: usize, _: usize, _: &Entry) {}
    #[inline(always)]
    fn finished(&mut self, _: &Result<Resolution, Error>) {}
}

/// Reports to `tracing`: the walk runs inside the `xplug_resolve` span,
/// with a `debug` event per provider called and one for the outcome.
struct Logged {
    _span: tracing::span::EnteredSpan,
}

impl Logged {
    /// Enters the resolve's span (possibly disabled: its events are then
    /// filtered as any other).
    fn enter(span: tracing::Span) -> Self {
        Self { _span: span.entered() }
    }
}

impl Observer for Logged {
    fn answered(&mut self, index: usize, entry: &Entry, request: &ResolveRequest<'_>) {
        tracing::debug!(
            provider = &*entry.name,
            provider_index = index,
            filled = (0..request.len()).filter(|&slot| request.is_filled(slot)).count(),
            "provider called"
        );
    }

    fn rewrote(&mut self, _: usize, _: usize, _: &Entry) {
        // `report_rewrite` warns whoever observes.
    }

    fn finished(&mut self, result: &Result<Resolution, Error>) {
        match result {
            Ok(resolution) => tracing::debug!(resolution = resolution.0, "resolved"),
            Err(error) if !error.missing_imports().is_empty() => {
                tracing::debug!(missing = error.missing_imports().len(), "required imports missing")
            }
            Err(error) => tracing::debug!(code = %error.code(), "resolve failed"),
        }
    }
}

/// Records a [`ResolveTrace`], and reports to `tracing` as [`Logged`].
struct Recorder<'t> {
    trace: &'t mut ResolveTrace,
    log: Logged,
}

impl Observer for Recorder<'_> {
    fn answered(&mut self, index: usize, entry: &Entry, request: &ResolveRequest<'_>) {
        self.trace.called.push(index);
        // A slot empty so far and filled now was filled by this provider
        // (a filled slot cannot become empty: rewrites are undone).
        for (slot, source) in self.trace.slots.iter_mut().enumerate() {
            if *source == SlotSource::Empty && request.is_filled(slot) {
                *source = SlotSource::Provider { index, name: entry.name.clone() };
            }
        }
        self.log.answered(index, entry, request);
    }

    fn rewrote(&mut self, slot: usize, index: usize, entry: &Entry) {
        self.trace.rewrites.push(SlotRewrite { slot, provider_index: index, provider: entry.name.clone() });
    }

    fn finished(&mut self, result: &Result<Resolution, Error>) {
        self.log.finished(result);
    }
}

impl Default for Manager {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("capacity", &self.inner.registry.capacity())
            .field("providers", &self.providers())
            .finish()
    }
}

impl Manager {
    /// A manager with no providers and no capacity limit (the default
    /// configuration of [`Manager::builder`]).
    #[must_use]
    pub fn new() -> Self {
        Self::from_shared(Shared {
            registry: Registry::new(None),
            loaders: xplug_providers::loaders(),
            allow_list: None,
        })
    }

    /// A handle on `shared`.
    pub(crate) fn from_shared(shared: Shared) -> Self {
        Self { inner: Arc::new(shared) }
    }

    /// Whether `self` and `other` are handles on the same manager.
    #[must_use]
    pub fn ptr_eq(&self, other: &Manager) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The capacity given to [`ManagerBuilder::capacity`](crate::ManagerBuilder::capacity); `None` when unbounded.
    #[must_use]
    pub fn capacity(&self) -> Option<usize> {
        self.inner.registry.capacity()
    }

    /// Number of registered providers.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.registry.len()
    }

    /// True when no provider is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers a provider the manager shares (it keeps a reference for its
    /// own life). It is asked before every provider registered earlier.
    ///
    /// A [`Manager`] is itself a provider, so managers can be stacked; a
    /// cycle of managers would make resolution recurse forever, and
    /// registering a manager into itself is refused.
    ///
    /// Returns what was registered: the provider's registration index and
    /// name.
    ///
    /// # Errors
    /// [`Error::CapacityReached`] when the manager is full, and
    /// [`Error::SelfRegistration`] when `provider` is this manager; nothing
    /// changes then.
    pub fn register_provider(&self, provider: Arc<dyn ImportProvider>) -> Result<Registered, Error> {
        // A handle on this manager names itself through `NAMED` (below).
        NAMED.set(0);
        let name = provider.name();
        if NAMED.get() == Arc::as_ptr(&self.inner) as usize {
            return Err(Error::SelfRegistration { provider: name.to_owned() });
        }
        self.register_entry(Held::Shared(provider))
    }

    pub(crate) fn register_entry(&self, provider: Held) -> Result<Registered, Error> {
        let name: Arc<str> = Arc::from(provider.get().name());
        let owned = provider.is_owned();
        match self.inner.registry.push(Entry { provider, name: name.clone() }) {
            Ok(index) => {
                tracing::debug!(index, provider = &*name, owned, "registered provider");
                Ok(Registered::new(index, name))
            }
            Err(entry) => Err(Error::CapacityReached {
                capacity: self.inner.registry.capacity().unwrap_or(usize::MAX),
                provider: entry.name.to_string(),
            }),
        }
    }

    /// Provider names in scan order (newest first).
    #[must_use]
    pub fn providers(&self) -> Vec<String> {
        let count = self.inner.registry.len();
        (0..count)
            .rev()
            .filter_map(|i| self.inner.registry.get(i))
            .map(|entry| entry.name.to_string())
            .collect()
    }

    /// Resolves `request` against every registered provider, newest first
    /// (the reference model in the type's documentation).
    ///
    /// This is a runtime's hot path: the common case, a fresh request that
    /// the newest provider fills completely, is one provider call and one
    /// pass over the slots, and no error value is built unless the resolve
    /// fails. With a `tracing` subscriber interested in the `debug` span
    /// `xplug_resolve`, the same walk also reports each provider called.
    ///
    /// # Errors
    /// [`Error::ProviderFailed`] when a provider fails with a code other than
    /// `NOT_FOUND`; [`Error::MissingImports`] when required slots stay empty.
    #[inline]
    pub fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        if request.is_empty() {
            return Ok(Resolution::NONE);
        }
        // Everything registered before this resolve is visible below `count`.
        let count = self.inner.registry.len();
        // One load of the global level filter: without a subscriber at
        // `debug`, the quiet walk, inlined here.
        if tracing::level_enabled!(tracing::Level::DEBUG) {
            return self.resolve_logged(request, count);
        }
        // The quiet walk, judged here: on success the only value written to
        // the caller's result is `Ok(NONE)` (a walk's outcome is two words,
        // so no error-sized value is built or copied unless one happened).
        match self.walk(request, count, &mut Quiet) {
            Walked::Complete => Ok(Resolution::NONE),
            Walked::Incomplete => self.judge_unfilled(request, count),
            Walked::Failed(error) => Err(*error),
        }
    }

    /// [`Manager::resolve`] when some subscriber takes `debug` events:
    /// logged if it wants the `xplug_resolve` span, quiet otherwise.
    #[cold]
    #[inline(never)]
    fn resolve_logged(&self, request: &mut ResolveRequest<'_>, count: usize) -> Result<Resolution, Error> {
        let span = tracing::debug_span!("xplug_resolve", providers = count, names = request.len());
        if span.is_disabled() {
            return self.resolve_observed(request, count, &mut Quiet);
        }
        self.resolve_observed(request, count, &mut Logged::enter(span))
    }

    /// [`Manager::resolve`], also reporting which provider filled each slot
    /// and which providers were called. The trace comes back with the
    /// result, success or failure, so a tool can show who supplied what even
    /// when required names are missing.
    pub fn resolve_traced(
        &self,
        request: &mut ResolveRequest<'_>,
    ) -> (ResolveTrace, Result<Resolution, Error>) {
        let slots = (0..request.len())
            .map(|i| if request.is_filled(i) { SlotSource::Prefilled } else { SlotSource::Empty })
            .collect();
        let mut trace = ResolveTrace { slots, called: Vec::new(), rewrites: Vec::new() };
        if request.is_empty() {
            return (trace, Ok(Resolution::NONE));
        }
        let count = self.inner.registry.len();
        let span = tracing::debug_span!("xplug_resolve", providers = count, names = request.len());
        let mut recorder = Recorder { trace: &mut trace, log: Logged::enter(span) };
        let result = self.resolve_observed(request, count, &mut recorder);
        drop(recorder);
        (trace, result)
    }

    /// The walk over the first `count` providers, then the judgement of the
    /// slots, reported to `observer`.
    #[inline]
    fn resolve_observed<O: Observer>(
        &self,
        request: &mut ResolveRequest<'_>,
        count: usize,
        observer: &mut O,
    ) -> Result<Resolution, Error> {
        let result = match self.walk(request, count, observer) {
            Walked::Complete => Ok(Resolution::NONE),
            Walked::Incomplete => self.judge_unfilled(request, count),
            Walked::Failed(error) => Err(*error),
        };
        observer.finished(&result);
        result
    }

    /// Asks providers `0..count` newest first to fill `request`
    /// (`docs/src/reference/resolution.md#reference-model`, steps 2 to 4): the walk stops
    /// before calling a provider once every slot is filled, and at the
    /// first provider that fails with a code other than `NOT_FOUND`. Each
    /// provider called while some slot is filled is held to the
    /// filled-slot rule ([`ResolveRequest::protect_filled`]).
    #[inline(always)]
    fn walk<O: Observer>(&self, request: &mut ResolveRequest<'_>, count: usize, observer: &mut O) -> Walked {
        let mut below = count;
        // A fresh request (known empty without a scan) is the common case:
        // its first provider has no filled slot to protect, so it is asked
        // here without the protection, and the loop takes the ones after it.
        if !request.any_filled() {
            let Some(index) = count.checked_sub(1) else {
                return Walked::Incomplete;
            };
            if let Some(end) = self.ask(index, count, request, observer, Protect::No) {
                return end;
            }
            below = index;
        } else if request.all_filled() {
            return Walked::Complete;
        }
        for index in (0..below).rev() {
            if let Some(end) = self.ask(index, count, request, observer, Protect::FilledSlots) {
                return end;
            }
        }
        Walked::Incomplete
    }

    /// One step of the walk: asks provider `index` (of the `count` read) to
    /// fill `request`, under the filled-slot rule when `protect` says so;
    /// `Some` with the walk's outcome when it ends here (a failure, or every
    /// slot filled).
    #[inline(always)]
    fn ask<O: Observer>(
        &self,
        index: usize,
        count: usize,
        request: &mut ResolveRequest<'_>,
        observer: &mut O,
        protect: Protect,
    ) -> Option<Walked> {
        let Some(entry) = self.inner.registry.get(index) else {
            return Some(Walked::Failed(unreadable_provider(index, count)));
        };
        let answer = match protect {
            Protect::No => supply(entry, request),
            Protect::FilledSlots => {
                let names = request.names();
                request.protect_filled(
                    |request| supply(entry, request),
                    |slot| {
                        report_rewrite(names[slot], slot, index, &entry.name);
                        observer.rewrote(slot, index, entry);
                    },
                )
            }
        };
        observer.answered(index, entry, request);
        if let Err(source) = answer {
            return Some(Walked::Failed(provider_failed(index, entry, *source)));
        }
        request.all_filled().then_some(Walked::Complete)
    }

    /// The outcome of a walk that left a slot empty.
    #[cold]
    fn judge_unfilled(&self, request: &ResolveRequest<'_>, count: usize) -> Result<Resolution, Error> {
        if request.missing_required().next().is_some() {
            return Err(self.missing_error(request, count));
        }
        // Not every slot is filled, yet no required one is empty.
        Ok(Resolution::MISSING_OPTIONAL)
    }

    /// Builds the "missing imports" error, with suggestions drawn from the
    /// exports of the first `count` providers.
    #[cold]
    #[inline(never)]
    fn missing_error(&self, request: &ResolveRequest<'_>, count: usize) -> Error {
        let missing: Vec<usize> = request.missing_required().collect();
        let mut exported: Vec<String> = (0..count)
            .filter_map(|i| self.inner.registry.get(i)?.provider.get().exported_names())
            .flatten()
            .collect();
        exported.sort_unstable();
        exported.dedup();
        let missing = missing
            .iter()
            .enumerate()
            .map(|(position, &index)| {
                let name = request.names()[index];
                // Bounded: only the first few missing names get one.
                let suggestion = (position < suggest::MAX_SUGGESTED_NAMES)
                    .then(|| suggest::closest(&String::from_utf8_lossy(name.bare()), exported.iter()))
                    .flatten()
                    .map(str::to_owned);
                MissingImport { index, name: name.as_c_str().to_string_lossy().into_owned(), suggestion }
            })
            .collect();
        Error::MissingImports { missing, provider_count: count }
    }
}

/// Whether a step of the walk holds its provider to the filled-slot rule.
#[derive(Clone, Copy)]
enum Protect {
    /// No slot is filled: nothing to protect.
    No,
    /// Some slot may be filled: [`ResolveRequest::protect_filled`].
    FilledSlots,
}

/// How a walk ended: two words, returned in registers, so the hot path
/// never moves an error-sized value.
enum Walked {
    /// Every slot is filled.
    Complete,
    /// Every provider was asked and a slot is still empty.
    Incomplete,
    /// The walk stopped at an error (boxed: errors are the cold path).
    Failed(Box<Error>),
}

/// Asks `entry` to fill `request` ([`ImportProvider::supply`]): an owned
/// plugin through a direct call, any other provider through its trait
/// object.
/// The error comes boxed, so the answer is one word on the hot path.
#[inline(always)]
fn supply(entry: &Entry, request: &mut ResolveRequest<'_>) -> Result<(), Box<xplug_providers::Error>> {
    let answer = match &entry.provider {
        Held::Plugin(plugin) => plugin.supply(request),
        Held::Shared(provider) => supply_shared(provider.as_ref(), request),
    };
    answer.map_err(Box::new)
}

/// [`supply`] for a provider held as a trait object, out of line so the
/// plugin path the hot loop takes stays compact.
#[inline(never)]
fn supply_shared(
    provider: &dyn ImportProvider,
    request: &mut ResolveRequest<'_>,
) -> Result<(), xplug_providers::Error> {
    provider.supply(request)
}

/// The error for a registry entry counted but not readable: unreachable by
/// the registry's publication argument, reported rather than skipped.
#[cold]
#[inline(never)]
fn unreadable_provider(index: usize, count: usize) -> Box<Error> {
    Box::new(Error::RegistryInconsistent { index, count })
}

/// The error for provider `index` failing with `source`.
#[cold]
#[inline(never)]
fn provider_failed(index: usize, entry: &Entry, source: xplug_providers::Error) -> Box<Error> {
    tracing::debug!(provider = &*entry.name, code = %source.code(), "provider failed");
    Box::new(Error::ProviderFailed { index, provider: entry.name.to_string(), source })
}

/// A manager's error as a provider's: missing imports are `NOT_FOUND`, a
/// provider's failure is passed on as it was.
fn provider_error(error: Error) -> xplug_providers::Error {
    match error {
        Error::MissingImports { missing, .. } => {
            xplug_providers::Error::NotFound { provider: "xplug-manager".into(), missing: missing.len() }
        }
        Error::ProviderFailed { source, .. } => source,
        other => xplug_providers::Error::ResolveFailed {
            provider: "xplug-manager".into(),
            code: other.code(),
            message: other.to_string(),
        },
    }
}

std::thread_local! {
    /// The shared state of the manager whose provider name this thread
    /// read last (0: none since it was cleared).
    static NAMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How deep this thread is in managers asked as providers.
    static NESTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Managers asked as providers inside one another deeper than this are a
/// cycle: a manager registered into itself through another manager.
const MAX_NESTED: u32 = 64;

/// One level of managers asked as providers on this thread; left when
/// dropped. A counter, not a list, so a manager asked as a provider pays
/// a few instructions for the guard.
struct Nested;

impl Nested {
    /// Enters one level, refusing a level beyond [`MAX_NESTED`]: a clone of
    /// a manager's handle was registered into a manager it holds, and
    /// resolution would recurse until the stack overflowed.
    #[inline]
    fn enter(_manager: &Manager) -> Result<Self, xplug_providers::Error> {
        let depth = NESTED.get();
        if depth >= MAX_NESTED {
            return Err(too_deep());
        }
        NESTED.set(depth + 1);
        Ok(Self)
    }
}

impl Drop for Nested {
    #[inline]
    fn drop(&mut self) {
        NESTED.set(NESTED.get() - 1);
    }
}

/// The error of [`Nested::enter`].
#[cold]
#[inline(never)]
fn too_deep() -> xplug_providers::Error {
    xplug_providers::Error::ResolveFailed {
        provider: "xplug-manager".into(),
        code: xplug_providers::abi::StatusCode::FAILED_PRECONDITION,
        message: format!(
            "managers are asked as providers more than {MAX_NESTED} deep: a manager is registered as a provider \
             of itself (a clone of its handle, through another manager) and resolution would recurse forever; \
             register managers into one another without a cycle"
        ),
    }
}

/// The manager is itself a provider, so managers compose and a manager can
/// be handed to anything that takes an [`ImportProvider`].
impl ImportProvider for Manager {
    /// Also records, for [`Manager::register_provider`], which manager
    /// was asked (`NAMED`): a handle on the registering manager itself is
    /// refused.
    fn name(&self) -> &str {
        NAMED.set(Arc::as_ptr(&self.inner) as usize);
        "xplug-manager"
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, xplug_providers::Error> {
        let _nested = Nested::enter(self)?;
        Manager::resolve(self, request).map_err(provider_error)
    }

    /// The walk of [`Manager::resolve`] without its judgement (the caller,
    /// another manager, judges the slots).
    fn supply(&self, request: &mut ResolveRequest<'_>) -> Result<(), xplug_providers::Error> {
        if request.is_empty() {
            return Ok(());
        }
        let _nested = Nested::enter(self)?;
        let count = self.inner.registry.len();
        match self.walk(request, count, &mut Quiet) {
            Walked::Complete | Walked::Incomplete => Ok(()),
            Walked::Failed(error) => Err(provider_error(*error)),
        }
    }

    /// Every name some provider exports, when every provider can list its
    /// exports; `None` as soon as one cannot.
    fn exported_names(&self) -> Option<Vec<String>> {
        let count = self.inner.registry.len();
        let mut names = Vec::new();
        for index in 0..count {
            names.extend(self.inner.registry.get(index)?.provider.get().exported_names()?);
        }
        names.sort_unstable();
        names.dedup();
        Some(names)
    }
}
