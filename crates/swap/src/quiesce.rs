//! The quiescence protocol of live swap (`docs/src/operating/swap.md#quiescence`): how a
//! swap knows that no call can still be inside the old version of a
//! plugin, at a cost per call of a few plain loads and stores.
//!
//! Every thread that calls a swappable import has a [`Reader`] record. A
//! call *enters* (its record's nesting depth goes up), loads the slot's
//! current binding, calls it, and *exits* (the depth goes down; leaving the
//! outermost call bumps the record's generation). A swap *publishes* the
//! new bindings, then runs [`synchronize`]: a heavy barrier, a snapshot of
//! every record inside a call, and a wait until each of those has left its
//! outermost call (its generation changed). After that no call can hold an
//! old binding, and the old version may be unloaded and unmapped.
//!
//! # Why the read side needs no fence
//!
//! A reader must not load the old binding after the writer's snapshot saw
//! it outside a call: that needs the reader's store of its depth ordered
//! before its load of the slot (store-load order, a full fence on x86),
//! against the writer's store of the slot ordered before its loads of the
//! records. Linux's `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` makes the
//! writer pay for both: it runs a full barrier on every CPU running a
//! thread of this process before it returns, so every reader either had
//! its depth store visible to the writer's snapshot (the writer waits for
//! it) or loads the slot after that barrier (and sees the new binding).
//! The read side then needs only a compiler fence. This is userspace RCU's
//! "memb" flavour. Where `membarrier` is unavailable (another OS, an old
//! kernel, a sandbox refusing it), both sides use `fence(SeqCst)`, which
//! gives the same order at a higher price per call.
//!
//! The state stores are `Release` and the writer's loads `Acquire`:
//! everything a call did through the old binding happens before the
//! writer's free, whichever later store of the thread the writer reads.
//!
//! # Model checking
//!
//! Built with `--cfg loom` (`cargo xtask loom`), the atomics are `loom`'s
//! and both barriers are `fence(SeqCst)` (what `membarrier` provides, as
//! the kernel implements it); `loom_tests` checks under every interleaving
//! that a reader never uses a binding after the writer freed it.

use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, fence};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, fence};

/// The low half of a record's state: the nesting depth of calls.
const DEPTH_MASK: u64 = 0xffff_ffff;
/// One generation: added when the outermost call exits.
const GENERATION: u64 = 1 << 32;

/// One thread's read-side record: its call nesting depth (low 32 bits) and
/// the number of outermost calls it finished (high 32 bits). Only its
/// thread writes it; swaps read it. One cache line, so threads do not
/// share lines.
#[repr(align(64))]
pub(crate) struct Reader {
    state: AtomicU64,
}

impl Reader {
    /// A record outside any call.
    pub(crate) fn new() -> Self {
        Self { state: AtomicU64::new(0) }
    }

    /// Marks the start of a call; the slot's binding may be loaded after
    /// it. Called only by the record's own thread.
    #[inline(always)]
    pub(crate) fn enter(&self) {
        // Only this thread stores the state: a load and a store, no
        // read-modify-write. `Release`, like the exit's store (a plain
        // store on x86): a swap that sees the generation change through
        // this store, having missed the exit before it, still
        // happens-after the previous call (`loom` found the `Relaxed`
        // version's race: a later relaxed store does not carry the earlier
        // release).
        let state = self.state.load(Ordering::Relaxed);
        self.state.store(state + 1, Ordering::Release);
        read_barrier();
    }

    /// Marks the end of a call entered with [`Reader::enter`]: nothing of
    /// the binding it loaded is used after it.
    #[inline(always)]
    pub(crate) fn exit(&self) {
        let state = self.state.load(Ordering::Relaxed);
        let next = if state & DEPTH_MASK == 1 { state - 1 + GENERATION } else { state - 1 };
        self.state.store(next, Ordering::Release);
    }

    /// True while the record's thread is inside a call (read by that
    /// thread).
    pub(crate) fn is_inside(&self) -> bool {
        self.state.load(Ordering::Relaxed) & DEPTH_MASK != 0
    }
}

/// Which barriers the protocol uses, decided once per process before the
/// first swappable import is handed out ([`init`]).
#[cfg(not(loom))]
static ASYMMETRIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Decides the barriers: the asymmetric pair when this process can
/// register for `membarrier`'s private expedited command. Idempotent; runs
/// before any reader can exist (a swappable plugin is made before it
/// resolves anything).
pub(crate) fn init() {
    #[cfg(not(loom))]
    {
        static DECIDED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let asymmetric = *DECIDED.get_or_init(heavy::register);
        ASYMMETRIC.store(asymmetric, Ordering::Relaxed);
        tracing::debug!(asymmetric, "live swap barriers decided");
    }
}

/// True when calls use the light read side (`membarrier` registered).
#[must_use]
pub(crate) fn asymmetric() -> bool {
    #[cfg(not(loom))]
    {
        ASYMMETRIC.load(Ordering::Relaxed)
    }
    #[cfg(loom)]
    {
        false
    }
}

/// The reader's side of the store-load order (see the module docs).
#[inline(always)]
fn read_barrier() {
    #[cfg(not(loom))]
    {
        if ASYMMETRIC.load(Ordering::Relaxed) {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            return;
        }
    }
    fence(Ordering::SeqCst);
}

/// The writer's side: `membarrier` when registered, else a fence. False
/// when the barrier could not be run (then nothing may be freed).
fn write_barrier() -> bool {
    #[cfg(not(loom))]
    {
        if ASYMMETRIC.load(Ordering::Relaxed) {
            return heavy::barrier();
        }
    }
    fence(Ordering::SeqCst);
    true
}

/// Waits until no call that could have loaded a binding before this point
/// is still running: after the bindings were published, the barrier, then
/// for every record inside a call, until it left its outermost call.
/// `wait` runs between polls (a back-off). False when the barrier failed:
/// the caller must then keep the old version forever.
pub(crate) fn synchronize<'r>(
    readers: impl IntoIterator<Item = &'r Reader>,
    mut wait: impl FnMut(u32),
) -> bool {
    if !write_barrier() {
        return false;
    }
    for reader in readers {
        let seen = reader.state.load(Ordering::Acquire);
        if seen & DEPTH_MASK == 0 {
            continue;
        }
        // Inside a call: wait for its outermost call to end (the
        // generation changes; nested calls only move the depth). The
        // generation would have to wrap (2^32 outermost calls) between two
        // polls to be missed.
        let mut polls = 0u32;
        while reader.state.load(Ordering::Acquire) >> 32 == seen >> 32 {
            wait(polls);
            polls = polls.saturating_add(1);
        }
    }
    true
}

/// `membarrier(2)`, through `rustix`.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
mod heavy {
    use rustix::thread::{MembarrierCommand, membarrier};

    /// Registers the process for the private expedited command; false when
    /// the kernel (or a sandbox) refuses.
    pub(super) fn register() -> bool {
        membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
    }

    /// A full barrier on every CPU running a thread of this process.
    pub(super) fn barrier() -> bool {
        match membarrier(MembarrierCommand::PrivateExpedited) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "membarrier failed after registration; the old version is kept loaded");
                false
            }
        }
    }
}

/// No `membarrier` here: both sides fence.
#[cfg(all(not(loom), not(any(target_os = "linux", target_os = "android"))))]
mod heavy {
    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn barrier() -> bool {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        true
    }
}

/// The protocol under `loom` (`cargo xtask loom`): one swap against
/// readers calling through the slot, with the old binding "freed" (written
/// over) as soon as `synchronize` returns. A binding is a `loom`
/// `UnsafeCell`: a call reading it concurrently with the free, without a
/// happens-before edge, fails the model, as a use-after-free would.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// What a freed binding holds.
    const FREED: usize = usize::MAX;

    struct Shared {
        /// Which binding is current.
        slot: AtomicUsize,
        /// Each binding holds its version until freed.
        bindings: [UnsafeCell<usize>; 2],
        readers: [Reader; 2],
    }

    fn shared() -> Arc<Shared> {
        Arc::new(Shared {
            slot: AtomicUsize::new(0),
            bindings: [UnsafeCell::new(0), UnsafeCell::new(1)],
            readers: [Reader::new(), Reader::new()],
        })
    }

    /// Reads binding `index` as a call through it does.
    fn use_binding(shared: &Shared, index: usize) -> usize {
        // SAFETY: loom checks this read against the free below; a race is
        // reported as a failure of the model, not undefined behaviour.
        let version = shared.bindings[index].with(|value| unsafe { *value });
        assert_ne!(version, FREED, "a call used binding {index} after it was freed");
        version
    }

    /// One call as the trampoline makes it: enter, load, use, exit.
    fn call(shared: &Shared, reader: usize) -> usize {
        let record = &shared.readers[reader];
        record.enter();
        let version = use_binding(shared, shared.slot.load(Ordering::Acquire));
        record.exit();
        version
    }

    /// [`call`] with the read side's barrier left out: the store of the
    /// depth may then be ordered after the load of the slot.
    fn call_without_the_barrier(shared: &Shared, reader: usize) -> usize {
        let record = &shared.readers[reader];
        let state = record.state.load(Ordering::Relaxed);
        record.state.store(state + 1, Ordering::Release);
        let version = use_binding(shared, shared.slot.load(Ordering::Acquire));
        record.exit();
        version
    }

    /// The swap: publish, synchronize, free the old binding.
    fn swap(shared: &Shared) {
        let old = shared.slot.swap(1, Ordering::AcqRel);
        assert!(synchronize(&shared.readers, |_| loom::thread::yield_now()));
        // SAFETY: as in `use_binding`: loom checks this write.
        shared.bindings[old].with_mut(|value| unsafe { *value = FREED });
    }

    #[test]
    fn swap_loom_no_call_uses_a_freed_binding() {
        loom::model(|| {
            let shared = shared();
            let reader = {
                let shared = shared.clone();
                loom::thread::spawn(move || {
                    let first = call(&shared, 0);
                    let second = call(&shared, 0);
                    // Versions only move forward.
                    assert!(second >= first);
                })
            };
            swap(&shared);
            reader.join().unwrap();
            // After the swap every call sees the new version.
            assert_eq!(call(&shared, 1), 1);
        });
    }

    #[test]
    fn swap_loom_two_calling_threads() {
        loom::model(|| {
            let shared = shared();
            // One call each: two calls each is beyond what `loom` explores
            // in minutes.
            let readers: Vec<_> = (0..2)
                .map(|reader| {
                    let shared = shared.clone();
                    loom::thread::spawn(move || {
                        call(&shared, reader);
                    })
                })
                .collect();
            swap(&shared);
            for reader in readers {
                reader.join().unwrap();
            }
        });
    }

    /// The model can fail: without the read side's barrier, `loom` finds
    /// a call reading the binding the swap frees.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn swap_loom_finds_the_race_when_the_read_barrier_is_missing() {
        loom::model(|| {
            let shared = shared();
            let reader = {
                let shared = shared.clone();
                loom::thread::spawn(move || {
                    call_without_the_barrier(&shared, 0);
                })
            };
            swap(&shared);
            reader.join().unwrap();
        });
    }

    #[test]
    fn swap_loom_nested_calls_hold_the_old_binding_until_the_outermost_exit() {
        loom::model(|| {
            let shared = shared();
            let reader = {
                let shared = shared.clone();
                loom::thread::spawn(move || {
                    let record = &shared.readers[0];
                    record.enter();
                    let outer = shared.slot.load(Ordering::Acquire);
                    let before = use_binding(&shared, outer);
                    // A nested call (an import calling another) in between.
                    let inner = call(&shared, 0);
                    // The outer call still uses its binding after the inner
                    // one exited.
                    assert_eq!(use_binding(&shared, outer), before);
                    record.exit();
                    assert!(inner >= before);
                })
            };
            swap(&shared);
            reader.join().unwrap();
        });
    }
}
