//! Live swap of an IREE import plugin: replace a plugin's build while
//! executables keep calling it (`docs/src/operating/swap.md`).
//!
//! A swappable plugin is an import provider of its own ([`SwapHandle::new`]
//! makes it, [`SwapHandle::provider`] is what a manager registers like any
//! other) that resolves every import to one trampoline whose context is a
//! slot it owns; [`SwapHandle::replace`] loads a new version, checks it,
//! points every slot at it, waits until no call is inside the old version
//! (`quiesce.rs`) and only then unloads the old one. `xplug-manager`'s
//! `Manager::load_swappable` (or a spec with `?swappable`) does all of this
//! for a spec and returns the handle.
//!
//! The install point is the provider's `supply`, which a resolve walk calls
//! as it calls any shared provider's: what it fills is the trampoline, so
//! any wrapper installed around the resolved function (a profiler) wraps
//! the trampoline, and the swap stays innermost. A plugin not loaded as
//! swappable never comes here: its imports resolve to its own functions.
//!
//! A `.so` version is never closed (`dlclose`): it is pinned when loaded
//! (`RTLD_NODELETE`, `docs/src/reference/loading.md#unload-policy`), its `unload` runs
//! after quiescence, its code stays mapped. A `.sos` version (xplug's own
//! loader: no libc, no thread-locals, nothing registered outside xplug) is
//! unmapped once quiescent.
//!
//! ```
//! # use sample_system as _;
//! use std::sync::Arc;
//! use xplug_providers::{LoadParamList, Plugin, STATIC};
//! use xplug_swap::{SwapHandle, VersionSource};
//!
//! /// New versions of plugins linked into this binary, named
//! /// `NAME?multiplier=N`.
//! struct Linked;
//!
//! impl VersionSource for Linked {
//!     unsafe fn load(&self, spec: &str) -> Result<Plugin, Box<dyn std::error::Error + Send + Sync>> {
//!         let (name, multiplier) = spec.split_once("?multiplier=").ok_or("NAME?multiplier=N")?;
//!         let params = LoadParamList::new().with("multiplier", multiplier);
//!         Ok(STATIC.linked_code(name)?.load(&params)?)
//!     }
//! }
//!
//! let source = Arc::new(Linked);
//! // SAFETY: sample_system is linked into this binary.
//! let first = unsafe { source.load("sample_system?multiplier=2") }?;
//! let handle = SwapHandle::new("sample_system?multiplier=2", first, source)?;
//! // A manager registers `handle.provider()` like any other provider; its
//! // imports then call through the handle's slots.
//! let _provider = handle.provider();
//!
//! // SAFETY: as above; no import of this plugin is running on this thread.
//! let swapped = unsafe { handle.replace("sample_system?multiplier=3") }?;
//! assert_eq!(swapped.previous_spec, "sample_system?multiplier=2");
//! assert_eq!(handle.current_spec(), "sample_system?multiplier=3");
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```

mod quiesce;

use std::cell::Cell;
use std::ffi::{CStr, CString, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use xplug_providers::abi::{ImportFn, Resolution};
use xplug_providers::{
    AllocationStats, ImportProvider, Plugin, RequestSlots, ResolveRequest, SystemLibraryCode,
};

mod error;

pub use error::Error;

/// A swappable plugin, the provider a manager registers: the current
/// version and the slots executables call through.
struct SwapCell {
    /// The plugin's header name (every version must keep it).
    name: Arc<str>,
    state: Mutex<SwapState>,
}

struct SwapState {
    /// The version serving calls.
    version: Version,
    /// One slot per import name ever resolved through this plugin, never
    /// removed or moved (boxed): executables hold their addresses for as
    /// long as the provider lives (the registry it is registered in keeps
    /// it).
    #[expect(clippy::vec_box, reason = "executables hold each slot's address: a push must not move it")]
    slots: Vec<Box<SwapSlot>>,
    /// Swaps done so far.
    swaps: u64,
}

/// One loaded version: the plugin and its binding for each slot (same
/// order as the slots).
struct Version {
    spec: String,
    plugin: Plugin,
    #[expect(clippy::vec_box, reason = "slots hold each binding's address: a push must not move it")]
    bindings: Vec<Box<Binding>>,
}

/// What a slot points at: a version's function and context for one import.
struct Binding {
    function: ImportFn,
    context: *mut c_void,
}

/// The context of the trampoline for one import.
struct SwapSlot {
    /// The import's bare name.
    name: CString,
    /// The current version's binding.
    current: AtomicPtr<Binding>,
}

// SAFETY: the raw pointers are a plugin's import functions and contexts,
// callable from any thread by the v0 ABI (`docs/src/reference/resolution.md#thread-safety`),
// and bindings are immutable once made; the state is behind a mutex.
unsafe impl Send for SwapState {}

/// What [`SwapHandle::replace`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Swapped {
    /// The spec of the version that was replaced (and is now unloaded).
    pub previous_spec: String,
    /// How many import slots now call the new version.
    pub rebound: usize,
    /// This plugin's swaps so far, this one included.
    pub swaps: u64,
    /// What the old version still held from the host allocator after its
    /// `unload` (anything live is a leak); `None` when its code had to be
    /// kept loaded because quiescence could not be established (logged).
    pub previous_allocations: Option<AllocationStats>,
}

impl SwapCell {
    fn new(spec: String, plugin: Plugin) -> Self {
        quiesce::init();
        let name = Arc::from(plugin.name());
        let version = Version { spec, plugin, bindings: Vec::new() };
        Self { name, state: Mutex::new(SwapState { version, slots: Vec::new(), swaps: 0 }) }
    }

    fn lock(&self) -> MutexGuard<'_, SwapState> {
        // A panic while holding the lock leaves the state consistent: every
        // change is a push or a whole-version replacement made last.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The install point: fills the empty slots of `request` that `cell`'s
/// current version exports with the trampoline and the import's slot.
fn supply_swappable(cell: &SwapCell, request: &mut ResolveRequest<'_>) -> Result<(), xplug_providers::Error> {
    let wanted: Vec<usize> = (0..request.len()).filter(|&index| !request.is_filled(index)).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let names = request.names();
    let mut resolved = RequestSlots::for_names(wanted.iter().map(|&index| names[index].as_c_str()));
    let mut state = cell.lock();
    state.version.plugin.supply(&mut resolved.request())?;
    for (position, &index) in wanted.iter().enumerate() {
        let function = resolved.fns()[position];
        // SAFETY: the plugin filled the slot with NULL or an import function,
        // and the v0 ABI gives every import the `ImportFn` signature.
        let Some(function) = (unsafe { xplug_providers::abi::import_fn_from_ptr(function) }) else {
            continue;
        };
        let context = resolved.contexts()[position];
        let slot = state.slot_for(names[index].bare(), Binding { function, context });
        request.fill(index, swap_trampoline, slot.cast_mut().cast());
    }
    Ok(())
}

impl SwapState {
    /// The slot for bare import `name`, made (pointing at `binding`, the
    /// current version's) if this is its first resolve.
    fn slot_for(&mut self, name: &[u8], binding: Binding) -> *const SwapSlot {
        if let Some(slot) = self.slots.iter().find(|slot| slot.name.as_bytes() == name) {
            return &raw const **slot;
        }
        let binding = Box::new(binding);
        let current = AtomicPtr::new((&raw const *binding).cast_mut());
        self.version.bindings.push(binding);
        // A name from a request has no interior NUL.
        let name = CString::new(name).unwrap_or_default();
        self.slots.push(Box::new(SwapSlot { name, current }));
        let slot = self.slots.last().expect("just pushed");
        &raw const **slot
    }
}

/// The function every swappable import resolves to: calls the slot's
/// current binding inside a read-side section of the quiescence protocol.
///
/// # Safety
/// `context` is the slot [`supply_swappable`] paired with this function,
/// owned by a provider the caller keeps alive (through the registry
/// that holds it, or resolved imports that do); `args` and `reserved` are
/// what the import expects.
unsafe extern "C" fn swap_trampoline(
    args: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int {
    // SAFETY: per the contract above, `context` is a live `SwapSlot`.
    let slot = unsafe { &*context.cast_const().cast::<SwapSlot>() };
    let reader = reader();
    reader.enter();
    // SAFETY: a published binding stays allocated until a swap has
    // unpublished it and seen every reader that could have loaded it leave
    // its call (`quiesce::synchronize`); we are inside a call.
    let binding = unsafe { &*slot.current.load(Ordering::Acquire) };
    // SAFETY: the binding is a function and context the plugin paired for
    // this import; the caller vouches for `args` and `reserved`.
    let result = unsafe { (binding.function)(args, binding.context, reserved) };
    reader.exit();
    result
}

thread_local! {
    /// This thread's read-side record, once it called a swappable import.
    static READER: Cell<Option<&'static quiesce::Reader>> = const { Cell::new(None) };
    /// Releases the record when the thread ends.
    static RELEASE: ReaderRelease = const { ReaderRelease };
}

/// Every record ever made, and which are in use: a swap waits on the ones
/// inside a call. Records are never freed (a thread's record is reused by
/// a later thread), so a swap may hold references to them.
static READERS: Mutex<Vec<(&'static quiesce::Reader, bool)>> = Mutex::new(Vec::new());

fn readers() -> MutexGuard<'static, Vec<(&'static quiesce::Reader, bool)>> {
    READERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This thread's record.
#[inline(always)]
fn reader() -> &'static quiesce::Reader {
    match READER.with(Cell::get) {
        Some(reader) => reader,
        None => register_reader(),
    }
}

/// Takes a free record (or makes one) for this thread.
#[cold]
#[inline(never)]
fn register_reader() -> &'static quiesce::Reader {
    let mut readers = readers();
    let reader = match readers.iter_mut().find(|(_, used)| !*used) {
        Some((reader, used)) => {
            *used = true;
            *reader
        }
        None => {
            let reader: &'static quiesce::Reader = Box::leak(Box::new(quiesce::Reader::new()));
            readers.push((reader, true));
            reader
        }
    };
    drop(readers);
    READER.with(|cell| cell.set(Some(reader)));
    // Arrange the release at thread exit. A thread already tearing down its
    // thread-locals keeps the record for good (it stays in use).
    let _ = RELEASE.try_with(|_| ());
    reader
}

/// Gives the thread's record back when the thread ends (it is outside any
/// call then).
struct ReaderRelease;

impl Drop for ReaderRelease {
    fn drop(&mut self) {
        let Ok(Some(reader)) = READER.try_with(|cell| cell.replace(None)) else {
            return;
        };
        if let Some(entry) = readers().iter_mut().find(|(record, _)| std::ptr::eq(*record, reader)) {
            entry.1 = false;
        }
    }
}

/// True when this thread is inside a swappable import's call.
fn inside_call() -> bool {
    READER.with(Cell::get).is_some_and(quiesce::Reader::is_inside)
}

/// Waits until no thread can be inside a binding unpublished before this
/// call. False when that could not be established.
fn wait_for_quiescence() -> bool {
    let readers: Vec<&'static quiesce::Reader> = readers().iter().map(|(reader, _)| *reader).collect();
    quiesce::synchronize(readers, |polls| {
        if polls < 64 {
            std::hint::spin_loop();
        } else if polls < 1024 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    })
}

/// True when calls through swappable imports pay no fence: the process
/// registered for Linux's `membarrier`, so swaps pay for the ordering
/// instead (`docs/src/operating/swap.md#quiescence`). False before the first swappable
/// plugin is made, and where `membarrier` is unavailable (calls then run
/// one `fence(SeqCst)` each).
#[must_use]
pub fn calls_are_fence_free() -> bool {
    quiesce::asymmetric()
}

impl ImportProvider for SwapCell {
    fn name(&self) -> &str {
        &self.name
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, xplug_providers::Error> {
        supply_swappable(self, request)?;
        request.outcome(Arc::clone(&self.name))
    }

    fn supply(&self, request: &mut ResolveRequest<'_>) -> Result<(), xplug_providers::Error> {
        supply_swappable(self, request)
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        self.lock().version.plugin.exported_names()
    }
}

/// Where a swappable plugin's next versions come from: loads the plugin a
/// spec names under the checks of whoever made the first version (for
/// `xplug-manager`, its loaders, its pins and its allow-lists).
pub trait VersionSource: Send + Sync {
    /// Loads the plugin `spec` names (not yet pinned: [`SwapHandle`] pins
    /// a shared library itself).
    ///
    /// # Errors
    /// Why `spec` cannot be loaded (a malformed spec, a loader error, a
    /// failed load check, the plugin's `load` refusing); it becomes the
    /// source of [`Error::LoadFailed`].
    ///
    /// # Safety
    /// Loading runs the plugin's code: the plugin `spec` names must be a
    /// trusted v0 plugin (the contract of [`SwapHandle::replace`], whose
    /// caller vouches for it).
    unsafe fn load(&self, spec: &str) -> Result<Plugin, Box<dyn std::error::Error + Send + Sync>>;
}

/// Pins `plugin` when it is a shared library, so a swap never closes it
/// (`docs/src/operating/swap.md#shared-libraries-are-never-closed`).
fn pin(plugin: &Plugin) -> Result<(), xplug_providers::Error> {
    match plugin.code().downcast_ref::<SystemLibraryCode>() {
        Some(code) => code.library().pin(),
        None => Ok(()),
    }
}

/// The handle of a swappable plugin: the provider to register
/// ([`SwapHandle::provider`]), and what replaces it by a new build and
/// tells which version serves. Cheap to clone; it keeps the plugin's
/// provider alive, not whoever registered it, and loads new versions
/// through the [`VersionSource`] it was made with.
#[derive(Clone)]
pub struct SwapHandle {
    cell: Arc<SwapCell>,
    /// Where new versions come from.
    source: Arc<dyn VersionSource>,
}

impl std::fmt::Debug for SwapHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapHandle").field("plugin", &self.cell.name).finish_non_exhaustive()
    }
}

/// Two handles are equal when they swap the same plugin.
impl PartialEq for SwapHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl Eq for SwapHandle {}

impl SwapHandle {
    /// Makes `plugin`, loaded from `spec`, swappable: its first version,
    /// with a shared library pinned (never closed). Register
    /// [`SwapHandle::provider`] to resolve imports through it; later
    /// versions are loaded through `source`.
    ///
    /// A call through a swappable import costs a few plain loads and
    /// stores more than a direct one (the README's benchmark row); plugins
    /// not made swappable resolve to their own functions and pay nothing.
    ///
    /// # Errors
    /// The loader's error when a shared library cannot be pinned.
    pub fn new(
        spec: impl Into<String>,
        plugin: Plugin,
        source: Arc<dyn VersionSource>,
    ) -> Result<SwapHandle, xplug_providers::Error> {
        pin(&plugin)?;
        Ok(SwapHandle { cell: Arc::new(SwapCell::new(spec.into(), plugin)), source })
    }

    /// The provider to register: it resolves every import the current
    /// version exports to a trampoline through a slot this handle owns.
    #[must_use]
    pub fn provider(&self) -> Arc<dyn ImportProvider> {
        Arc::clone(&self.cell) as Arc<dyn ImportProvider>
    }

    /// The plugin's header name (every version keeps it).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.cell.name
    }

    /// Replaces the swappable plugin by the plugin `spec` names.
    ///
    /// Executables already loaded call the new version from their next
    /// call on; nothing is reloaded. Calls in flight finish on the old
    /// version. This returns once no call can still be inside the old
    /// version, after its `unload` ran and, for a `.sos`, its memory was
    /// unmapped; it waits for the calls in flight to end. Resolves through
    /// this plugin wait while a swap runs. Swaps of one plugin are
    /// serialised.
    ///
    /// The new version must have the same plugin name, export every
    /// import resolved through this plugin so far, and describe each such
    /// import's args layout as the old version did (when both describe
    /// it). Otherwise the swap is refused, the new version is unloaded,
    /// and the old one keeps serving: nothing changes.
    ///
    /// With `xplug-manager`, `Manager::load_swappable` makes the handle
    /// (its docs show a swap).
    ///
    /// # Errors
    /// [`Error::InsideImport`] when called from inside a swappable
    /// import's call (it would wait for itself); [`Error::LoadFailed`]
    /// when the [`VersionSource`] cannot load `spec` or a shared library
    /// cannot be pinned; [`Error::Incompatible`] for another plugin name or
    /// a changed args layout; [`Error::MissingImports`] when it lacks an
    /// import in use.
    ///
    /// # Safety
    /// The plugin `spec` names must be a trusted v0 plugin (loading runs
    /// its code), as for any load; and it must be a drop-in replacement:
    /// every import keeps its args contract.
    pub unsafe fn replace(&self, spec: &str) -> Result<Swapped, Error> {
        let cell = &*self.cell;
        if inside_call() {
            return Err(Error::InsideImport { plugin: cell.name.to_string() });
        }
        let refused_load = |source: Box<dyn std::error::Error + Send + Sync>| Error::LoadFailed {
            plugin: cell.name.to_string(),
            spec: spec.to_owned(),
            source,
        };
        // SAFETY: forwarded to the caller.
        let plugin = unsafe { self.source.load(spec) }.map_err(refused_load)?;
        pin(&plugin).map_err(|source| refused_load(Box::new(source)))?;
        let mut state = cell.lock();
        let new = check_version(&cell.name, spec, &state, plugin)?;
        // Publish: every slot now points at the new version.
        for (slot, binding) in state.slots.iter().zip(&new.bindings) {
            slot.current.store((&raw const **binding).cast_mut(), Ordering::Release);
        }
        let old = std::mem::replace(&mut state.version, new);
        state.swaps += 1;
        let (rebound, swaps) = (state.slots.len(), state.swaps);
        let quiescent = wait_for_quiescence();
        drop(state);
        let previous_spec = old.spec.clone();
        let previous_allocations = if quiescent {
            Some(old.plugin.unload())
        } else {
            // No proof that no call is inside it: keep it loaded for good.
            std::mem::forget(old);
            None
        };
        tracing::info!(plugin = &*cell.name, spec, previous = %previous_spec, rebound, swaps, "plugin swapped");
        Ok(Swapped { previous_spec, rebound, swaps, previous_allocations })
    }

    /// The spec of the version serving now.
    #[must_use]
    pub fn current_spec(&self) -> String {
        self.cell.lock().version.spec.clone()
    }
}

/// Checks `plugin` as the next version of the plugin named `name` whose
/// state is `state`, and binds every slot to it; the refusal otherwise
/// (the plugin is then dropped: unloaded).
fn check_version(name: &str, spec: &str, state: &SwapState, plugin: Plugin) -> Result<Version, Error> {
    let refused =
        |reason: String| Error::Incompatible { plugin: name.to_owned(), spec: spec.to_owned(), reason };
    if plugin.name() != name {
        return Err(refused(format!(
            "it is plugin `{}`, not `{name}`; a swap replaces a plugin by another build of itself",
            plugin.name()
        )));
    }
    let names: Vec<&CStr> = state.slots.iter().map(|slot| slot.name.as_c_str()).collect();
    let mut resolved = RequestSlots::for_names(names.iter().copied());
    let answer = plugin.supply(&mut resolved.request());
    let missing: Vec<String> = names
        .iter()
        .zip(resolved.fns())
        .filter(|(_, function)| function.is_null())
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    if !missing.is_empty() || answer.is_err() {
        return Err(Error::MissingImports {
            plugin: name.to_owned(),
            spec: spec.to_owned(),
            missing: if missing.is_empty() {
                names.iter().map(|name| name.to_string_lossy().into_owned()).collect()
            } else {
                missing
            },
        });
    }
    if let (Some(old), Some(new)) = (state.version.plugin.import_layouts(), plugin.import_layouts()) {
        for slot in &state.slots {
            let symbol = slot.name.to_string_lossy();
            let before = old.iter().find(|layout| layout.symbol == symbol);
            let after = new.iter().find(|layout| layout.symbol == symbol);
            if let (Some(before), Some(after)) = (before, after)
                && before != after
            {
                return Err(refused(format!(
                    "the args layout of import `{symbol}` changed ({} bytes, align {} before; {} bytes, align {} \
                     now, or its fields differ); executables compiled against the old layout would misread it",
                    before.size, before.align, after.size, after.align
                )));
            }
        }
    }
    let bindings = resolved
        .fns()
        .iter()
        .zip(resolved.contexts())
        .map(|(&function, &context)| {
            // SAFETY: as in `supply_swappable`; every slot is non-NULL
            // (checked above).
            let function = unsafe { xplug_providers::abi::import_fn_from_ptr(function) };
            function.map(|function| Box::new(Binding { function, context }))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| refused("a resolved function slot turned NULL".to_owned()))?;
    if state.slots.iter().zip(&bindings).any(|(slot, binding)| {
        // SAFETY: the slot's binding is the old version's, alive under the
        // state lock we hold.
        let old = unsafe { &*slot.current.load(Ordering::Relaxed) };
        std::ptr::fn_addr_eq(old.function, binding.function)
    }) {
        tracing::warn!(
            plugin = name,
            spec,
            "the new version's import functions are the old version's code: a shared library rebuilt at the \
             same path is the copy already loaded (never closed); give each build its own file name"
        );
    }
    drop(names);
    Ok(Version { spec: spec.to_owned(), plugin, bindings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_reuses_a_released_record() {
        let first = std::thread::spawn(|| std::ptr::from_ref(reader()) as usize).join().unwrap();
        let second = std::thread::spawn(|| std::ptr::from_ref(reader()) as usize).join().unwrap();
        // Other tests may take records concurrently; the released one is
        // free for someone, and nothing is in use on finished threads.
        assert!(readers().iter().any(|(record, _)| std::ptr::from_ref(*record) as usize == first));
        assert!(readers().iter().any(|(record, _)| std::ptr::from_ref(*record) as usize == second));
        let record =
            readers().iter().find(|(record, _)| std::ptr::from_ref(*record) as usize == second).copied();
        assert_eq!(record.map(|(_, used)| used), Some(false), "a finished thread's record is released");
    }

    #[test]
    fn synchronize_returns_when_no_call_is_inside() {
        quiesce::init();
        assert!(wait_for_quiescence());
    }
}
