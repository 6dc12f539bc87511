//! The manager: providers in registration order, resolved newest first.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use xplug_providers::abi::{Resolution, StatusCode};
use xplug_providers::{ImportProvider, Plugin, ResolveRequest};

use crate::Registered;
use crate::error::{Error, MissingImport};
use crate::registry::{Entry, Registry};
use crate::suggest;

/// Composes import providers and plugins with IREE's resolution semantics.
///
/// Providers are kept in registration order and asked **newest first**, so a
/// later registration overrides an earlier one. [`Manager::resolve`]
/// implements `docs/resolution.md#reference-model` exactly:
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
pub struct Manager {
    pub(crate) registry: Registry,
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
/// old function and context back (`docs/resolution.md#provider-rules`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRewrite {
    /// The slot, in request order.
    pub slot: usize,
    /// Registration index of the provider that rewrote it.
    pub provider_index: usize,
    /// Its name.
    pub provider: Arc<str>,
}

/// Slots held on the stack when guarding filled slots; larger requests use
/// the heap.
const GUARD_INLINE: usize = 32;

/// The filled slots before a provider call, to undo changes to them.
/// Its buffers are set up on first use: a resolve that never calls a
/// provider with filled slots pays nothing for them.
struct SlotGuard {
    buffers: Option<Box<GuardBuffers>>,
}

/// Where a [`SlotGuard`] keeps a snapshot.
struct GuardBuffers {
    inline: [[*mut c_void; GUARD_INLINE]; 2],
    heap: Vec<*mut c_void>,
}

impl SlotGuard {
    fn lazy() -> Self {
        Self { buffers: None }
    }

    /// Calls `call` on `request`; when slots were filled before, any change
    /// `call` makes to them is undone and `rewritten(slot)` reported.
    #[inline]
    fn call<R>(
        &mut self,
        request: &mut ResolveRequest<'_>,
        call: impl FnOnce(&mut ResolveRequest<'_>) -> R,
        rewritten: impl FnMut(usize),
    ) -> R {
        // Nothing filled, nothing to protect: the common first call pays
        // one scan of the function slots.
        if !request.any_filled() {
            return call(request);
        }
        self.protect(request, call, rewritten)
    }

    /// [`SlotGuard::call`] for a request known to have filled slots (the
    /// caller made the check).
    fn protect<R>(
        &mut self,
        request: &mut ResolveRequest<'_>,
        call: impl FnOnce(&mut ResolveRequest<'_>) -> R,
        rewritten: impl FnMut(usize),
    ) -> R {
        let len = request.len();
        let buffers = self.buffers.get_or_insert_with(|| {
            Box::new(GuardBuffers { inline: [[std::ptr::null_mut(); GUARD_INLINE]; 2], heap: Vec::new() })
        });
        let (fns, contexts): (&mut [*mut c_void], &mut [*mut c_void]) = if len <= GUARD_INLINE {
            let [fns, contexts] = &mut buffers.inline;
            (&mut fns[..len], &mut contexts[..len])
        } else {
            buffers.heap.clear();
            buffers.heap.resize(2 * len, std::ptr::null_mut());
            buffers.heap.split_at_mut(len)
        };
        request.snapshot(fns, contexts);
        let result = call(request);
        request.undo_rewrites(fns, contexts, rewritten);
        result
    }
}

/// Logs a provider's rewrite of a filled slot (undone).
#[cold]
#[inline(never)]
fn report_rewrite(request: &ResolveRequest<'_>, slot: usize, index: usize, provider: &str) {
    tracing::warn!(
        provider,
        provider_index = index,
        slot,
        import = %request.names()[slot].as_c_str().to_string_lossy(),
        "provider #{index} `{provider}` rewrote import slot {slot} that was already filled; the change was \
         undone (a provider must skip filled slots)"
    );
}

impl Default for Manager {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("capacity", &self.registry.capacity())
            .field("providers", &self.providers())
            .finish()
    }
}

impl Manager {
    /// A manager with no providers and no capacity limit.
    #[must_use]
    pub fn new() -> Self {
        Self { registry: Registry::new(None) }
    }

    /// A manager holding at most `capacity` providers; registering more
    /// fails with [`Error::CapacityReached`] (`RESOURCE_EXHAUSTED`), like
    /// IREE's fixed-capacity manager.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self { registry: Registry::new(Some(capacity)) }
    }

    /// The capacity given to [`Manager::with_capacity`]; `None` when unbounded.
    #[must_use]
    pub fn capacity(&self) -> Option<usize> {
        self.registry.capacity()
    }

    /// Number of registered providers.
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
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
        if std::ptr::addr_eq(Arc::as_ptr(&provider), std::ptr::from_ref(self)) {
            return Err(Error::SelfRegistration { provider: provider.name().to_owned() });
        }
        self.register_entry(provider, None, false)
    }

    pub(crate) fn register_entry(
        &self,
        provider: Arc<dyn ImportProvider>,
        plugin: Option<Arc<Plugin>>,
        owned: bool,
    ) -> Result<Registered, Error> {
        let name: Arc<str> = Arc::from(provider.name());
        let entry = Entry { provider, plugin, name: name.clone(), owned };
        match self.registry.push(entry) {
            Ok(index) => {
                tracing::debug!(index, provider = &*name, owned, "registered provider");
                Ok(Registered::new(index, name))
            }
            Err(entry) => Err(Error::CapacityReached {
                capacity: self.registry.capacity().unwrap_or(usize::MAX),
                provider: entry.name.to_string(),
            }),
        }
    }

    /// Provider names in scan order (newest first).
    #[must_use]
    pub fn providers(&self) -> Vec<String> {
        let count = self.registry.len();
        (0..count).rev().filter_map(|i| self.registry.get(i)).map(|entry| entry.name.to_string()).collect()
    }

    /// Resolves `request` against every registered provider, newest first
    /// (the reference model in the type's documentation).
    ///
    /// # Errors
    /// [`Error::ProviderFailed`] when a provider fails with a code other than
    /// `NOT_FOUND`; [`Error::MissingImports`] when required slots stay empty.
    pub fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        if request.is_empty() {
            return Ok(Resolution::NONE);
        }
        // The spans of the traced path cost more than a plugin's resolve;
        // take it only when a subscriber wants them.
        if tracing::level_enabled!(tracing::Level::DEBUG)
            && (tracing::enabled!(target: "xplug_manager::manager", tracing::Level::DEBUG)
                || tracing::enabled!(target: "xplug_providers::plugin", tracing::Level::DEBUG))
        {
            return self.resolve_with(request, None);
        }
        self.resolve_quiet(request)
    }

    /// [`Manager::resolve`] without tracing: the same walk and judgement,
    /// with plugins called through their C entry point directly and no error
    /// value built unless the resolve fails.
    ///
    /// This is a runtime's hot path, so it does the least work the semantics
    /// allow. The common case, a fresh request that the newest provider
    /// fills completely, is handled here: one provider call and one pass
    /// over the slots to judge them. Everything else (filled slots to guard,
    /// older providers to ask, empty slots to judge) continues in
    /// [`Manager::resolve_rest`].
    #[inline]
    fn resolve_quiet(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        let count = self.registry.len();
        let Some(newest) = count.checked_sub(1) else {
            return self.judge(request, 0);
        };
        if request.any_filled() {
            if request.all_filled() {
                return Ok(Resolution::NONE);
            }
            return self.resolve_rest(request, count, count);
        }
        let Some(entry) = self.registry.get(newest) else {
            return Err(unreadable_provider(newest, count));
        };
        if let Err(source) = call_provider(entry, request) {
            return Err(provider_failed(newest, entry, source));
        }
        if request.all_filled() {
            return Ok(Resolution::NONE);
        }
        self.resolve_rest(request, newest, count)
    }

    /// The rest of [`Manager::resolve_quiet`]'s walk over a request with an
    /// empty slot: providers `0..below` newest first (of the `count` the
    /// resolve saw), each called through the filled-slot guard when slots
    /// are already filled (one check per provider), then the judgement.
    #[inline(never)]
    fn resolve_rest(
        &self,
        request: &mut ResolveRequest<'_>,
        below: usize,
        count: usize,
    ) -> Result<Resolution, Error> {
        let mut guard = SlotGuard::lazy();
        for (index, entry) in self.registry.newest_first(below) {
            let Some(entry) = entry else {
                return Err(unreadable_provider(index, count));
            };
            let answer = if request.any_filled() {
                call_guarded(&mut guard, request, index, entry)
            } else {
                call_provider(entry, request)
            };
            if let Err(source) = answer {
                return Err(provider_failed(index, entry, source));
            }
            if request.all_filled() {
                return Ok(Resolution::NONE);
            }
        }
        self.judge_unfilled(request, count)
    }

    /// The outcome the slots show after the walk over the first `count`
    /// providers: one pass when every slot is filled.
    fn judge(&self, request: &ResolveRequest<'_>, count: usize) -> Result<Resolution, Error> {
        if request.all_filled() {
            return Ok(Resolution::NONE);
        }
        self.judge_unfilled(request, count)
    }

    /// [`Manager::judge`] for a request known to have an empty slot.
    #[cold]
    fn judge_unfilled(&self, request: &ResolveRequest<'_>, count: usize) -> Result<Resolution, Error> {
        if request.missing_required().next().is_some() {
            return Err(self.missing_error(request, count));
        }
        // Not every slot is filled, yet no required one is empty.
        Ok(Resolution::MISSING_OPTIONAL)
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
        let result = self.resolve_with(request, Some(&mut trace));
        (trace, result)
    }

    fn resolve_with(
        &self,
        request: &mut ResolveRequest<'_>,
        mut trace: Option<&mut ResolveTrace>,
    ) -> Result<Resolution, Error> {
        if request.is_empty() {
            return Ok(Resolution::NONE);
        }
        // Everything registered before this load is visible below `count`.
        let count = self.registry.len();
        let span = tracing::debug_span!("xplug_resolve", providers = count, names = request.len());
        let _entered = span.enter();
        let mut guard = SlotGuard::lazy();

        for index in (0..count).rev() {
            if request.all_filled() {
                break;
            }
            let Some(entry) = self.registry.get(index) else {
                return Err(unreadable_provider(index, count));
            };
            let empty_before: Option<Vec<bool>> =
                trace.as_ref().map(|_| (0..request.len()).map(|i| !request.is_filled(i)).collect());
            let mut rewritten = Vec::new();
            let result =
                guard.call(request, |request| entry.provider.resolve(request), |slot| rewritten.push(slot));
            for &slot in &rewritten {
                report_rewrite(request, slot, index, &entry.name);
            }
            if let (Some(trace), Some(empty_before)) = (trace.as_deref_mut(), empty_before) {
                trace.called.push(index);
                for (slot, was_empty) in empty_before.into_iter().enumerate() {
                    if was_empty && request.is_filled(slot) {
                        trace.slots[slot] = SlotSource::Provider { index, name: entry.name.clone() };
                    }
                }
                trace.rewrites.extend(rewritten.into_iter().map(|slot| SlotRewrite {
                    slot,
                    provider_index: index,
                    provider: entry.name.clone(),
                }));
            }
            match result {
                Ok(_) => {}
                Err(error) if error.code() == StatusCode::NOT_FOUND || error.code().is_ok() => {}
                Err(source) => return Err(provider_failed(index, entry, source)),
            }
        }

        let result = self.judge(request, count);
        match &result {
            Ok(resolution) => tracing::debug!(resolution = resolution.0, "resolved"),
            Err(error) => {
                tracing::debug!(missing = error.missing_imports().len(), "required imports missing")
            }
        }
        result
    }

    /// Builds the "missing imports" error, with suggestions drawn from the
    /// exports of the first `count` providers.
    #[cold]
    #[inline(never)]
    fn missing_error(&self, request: &ResolveRequest<'_>, count: usize) -> Error {
        let missing: Vec<usize> = request.missing_required().collect();
        let mut exported: Vec<String> =
            (0..count).filter_map(|i| self.registry.get(i)?.provider.exported_names()).flatten().collect();
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
        Error::MissingImports { missing, providers: count }
    }
}

/// Asks `entry` to fill `request`: a plugin through its C entry point
/// (status unjudged), any other provider through its trait. `NOT_FOUND` and
/// OK both continue the walk; any other failure is returned.
#[inline(always)]
fn call_provider(entry: &Entry, request: &mut ResolveRequest<'_>) -> Result<(), xplug_providers::Error> {
    match &entry.plugin {
        Some(plugin) => match plugin.resolve_unjudged(request) {
            StatusCode::OK | StatusCode::NOT_FOUND => Ok(()),
            code => Err(plugin.resolve_failed(code, request.len())),
        },
        None => match entry.provider.resolve(request) {
            Err(error) if error.code() != StatusCode::NOT_FOUND && !error.code().is_ok() => Err(error),
            _ => Ok(()),
        },
    }
}

/// [`call_provider`] for a request with filled slots (the caller checked):
/// any change the provider makes to them is undone and reported.
#[inline(never)]
fn call_guarded(
    guard: &mut SlotGuard,
    request: &mut ResolveRequest<'_>,
    index: usize,
    entry: &Entry,
) -> Result<(), xplug_providers::Error> {
    let mut rewritten = Vec::new();
    let answer = guard.protect(request, |request| call_provider(entry, request), |slot| rewritten.push(slot));
    for slot in rewritten {
        report_rewrite(request, slot, index, &entry.name);
    }
    answer
}

/// The error for a registry entry counted but not readable: unreachable by
/// the registry's publication argument, reported rather than skipped.
#[cold]
#[inline(never)]
fn unreadable_provider(index: usize, count: usize) -> Error {
    Error::RegistryInconsistent { index, count }
}

/// The error for provider `index` failing with `source`.
#[cold]
#[inline(never)]
fn provider_failed(index: usize, entry: &Entry, source: xplug_providers::Error) -> Error {
    tracing::debug!(provider = &*entry.name, code = %source.code(), "provider failed");
    Error::ProviderFailed { index, provider: entry.name.to_string(), source }
}

/// The manager is itself a provider, so managers compose and a manager can
/// be handed to anything that takes an [`ImportProvider`].
impl ImportProvider for Manager {
    fn name(&self) -> &str {
        "xplug-manager"
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, xplug_providers::Error> {
        Manager::resolve(self, request).map_err(|error| match error {
            Error::MissingImports { missing, .. } => {
                xplug_providers::Error::NotFound { provider: "xplug-manager".into(), missing: missing.len() }
            }
            Error::ProviderFailed { source, .. } => source,
            other => xplug_providers::Error::ResolveFailed {
                provider: "xplug-manager".into(),
                code: other.code(),
                message: other.to_string(),
            },
        })
    }

    /// Every name some provider exports, when every provider can list its
    /// exports; `None` as soon as one cannot.
    fn exported_names(&self) -> Option<Vec<String>> {
        let count = self.registry.len();
        let mut names = Vec::new();
        for index in 0..count {
            names.extend(self.registry.get(index)?.provider.exported_names()?);
        }
        names.sort_unstable();
        names.dedup();
        Some(names)
    }
}
