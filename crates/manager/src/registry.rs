//! The append-only provider registry that resolution reads without a lock.
//!
//! # Design
//!
//! Entries live in segments whose sizes double (8, 16, 32, ... entries).
//! The first segment is part of the registry itself (most managers hold a
//! handful of providers, and resolution then reads it with no pointer to
//! follow);
//! later ones are allocated on demand. A segment is never moved and never freed before the
//! registry is dropped, so a reference to an entry stays valid for the
//! registry's life even while later entries are appended. Every segment and
//! every entry sits in a [`OnceLock`]: written once, then read-only.
//!
//! Writers (registration) are serialised by a [`Mutex`]. Holding it, a writer
//! initialises the next entry (allocating its segment first if needed) and
//! then publishes it by storing the new count with [`Ordering::Release`].
//!
//! Readers (resolution) take no lock. They load the count with
//! [`Ordering::Acquire`] and read entries `0..count` with
//! [`OnceLock::get`], which is a single atomic acquire load and never blocks.
//!
//! # Why readers always find the entries they count
//!
//! The writer's `OnceLock` initialisations of the segment and the entry are
//! sequenced before its `Release` store of the count. A reader whose
//! `Acquire` load observes count `n` therefore happens-after the
//! initialisation of every entry below `n` (each earlier count was stored by
//! a writer that held the mutex after the writers of the lower entries), so
//! [`OnceLock::get`] returns `Some` for each of them. A reader that loaded an
//! older count simply does not look at newer entries: it sees a prefix of the
//! registration order, which is the documented semantics ("a resolve sees
//! the providers registered before it started; later ones may be missed").
//! Entries are immutable once set, so concurrent readers share them freely.
//! None of this uses `unsafe`: the memory-safety argument is carried by
//! `OnceLock` itself, the ordering argument above only guarantees that the
//! `get` calls succeed (a failure would be reported, not undefined behaviour).
//!
//! # Model checking
//!
//! Built with `--cfg loom` (`cargo xtask loom`), the mutex and the count are
//! `loom`'s, and every `OnceLock` carries a `loom` flag published with
//! `Release` after the value is set and read with `Acquire` before it is
//! looked at ([`loom_once::OnceLock`]). The model in `loom_tests` runs
//! writers and a reader under every interleaving `loom` explores and
//! asserts the argument above: each entry below a count a reader loaded is
//! there, and readers see a prefix of the registration order.
//!
//! # Drop order
//!
//! Dropping the registry drops entries newest first, so plugins are unloaded
//! in reverse registration order.

use std::sync::Arc;
use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::sync::{Mutex, atomic::AtomicUsize};
#[cfg(not(loom))]
use std::sync::{Mutex, OnceLock, atomic::AtomicUsize};

#[cfg(loom)]
use loom_once::OnceLock;

use xplug_providers::{ImportProvider, Plugin};

/// Entries in the first segment; segment `k` holds `FIRST_SEGMENT << k`.
const FIRST_SEGMENT: usize = 8;
/// Number of segments: enough for more entries than memory can hold.
const SEGMENTS: usize = usize::BITS as usize - 2;

/// One registered provider.
pub(crate) struct Entry {
    /// The provider.
    pub(crate) provider: Held,
    /// Its name, captured at registration.
    pub(crate) name: Arc<str>,
}

/// How the registry holds a provider.
pub(crate) enum Held {
    /// A plugin the manager owns (`register_plugin`): resolution calls it
    /// directly, without a trait object, and it is unloaded when its entry
    /// drops.
    Plugin(Box<Plugin>),
    /// A provider the manager shares with whoever registered it.
    Shared(Arc<dyn ImportProvider>),
}

impl Held {
    /// The provider, whichever way it is held.
    pub(crate) fn get(&self) -> &dyn ImportProvider {
        match self {
            Self::Plugin(plugin) => &**plugin,
            Self::Shared(provider) => &**provider,
        }
    }

    /// True for a plugin the manager owns.
    pub(crate) fn is_owned(&self) -> bool {
        matches!(self, Self::Plugin(_))
    }
}

type Segment = Box<[OnceLock<Entry>]>;

/// Append-only, lock-free-to-read list of providers.
pub(crate) struct Registry {
    /// Segment 0, held inline.
    first: [OnceLock<Entry>; FIRST_SEGMENT],
    /// Segments 1 and up (index 0 unused).
    segments: [OnceLock<Segment>; SEGMENTS],
    /// Number of published entries.
    count: AtomicUsize,
    /// Serialises writers.
    writer: Mutex<()>,
    /// Maximum number of entries, if bounded.
    capacity: Option<usize>,
}

/// Segment number and offset within it of entry `index`.
fn locate(index: usize) -> (usize, usize) {
    // Segment k starts at FIRST_SEGMENT * (2^k - 1). With
    // j = index / FIRST_SEGMENT + 1, k = floor(log2(j)).
    let j = index / FIRST_SEGMENT + 1;
    let segment = (usize::BITS - 1 - j.leading_zeros()) as usize;
    let start = FIRST_SEGMENT * ((1usize << segment) - 1);
    (segment, index - start)
}

impl Registry {
    pub(crate) fn new(capacity: Option<usize>) -> Self {
        Self {
            first: std::array::from_fn(|_| OnceLock::new()),
            segments: std::array::from_fn(|_| OnceLock::new()),
            count: AtomicUsize::new(0),
            writer: Mutex::new(()),
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    /// Number of published entries (acquire: every entry below it is readable).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Entry `index`, which must be below a count previously returned by
    /// [`Registry::len`]; `None` otherwise.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&Entry> {
        // Most managers hold fewer than FIRST_SEGMENT providers.
        if let Some(slot) = self.first.get(index) {
            return slot.get();
        }
        let (segment, offset) = locate(index);
        self.segment(segment)?.get(offset)?.get()
    }

    /// Segment `k`, if allocated.
    #[inline]
    fn segment(&self, k: usize) -> Option<&[OnceLock<Entry>]> {
        if k == 0 { Some(&self.first[..]) } else { self.segments.get(k)?.get().map(|slots| &slots[..]) }
    }

    /// Appends `entry`; on a full bounded registry gives it back unchanged.
    pub(crate) fn push(&self, entry: Entry) -> Result<usize, Entry> {
        // A writer that panicked cannot have published a half-written entry
        // (publication is the last step), so a poisoned lock is still usable.
        let _guard = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only writers store the count, and we are the only writer.
        let index = self.count.load(Ordering::Relaxed);
        if self.capacity.is_some_and(|capacity| index >= capacity) {
            return Err(entry);
        }
        let (segment, offset) = locate(index);
        let slots: &[OnceLock<Entry>] = if segment == 0 {
            &self.first[..]
        } else {
            let Some(segment_cell) = self.segments.get(segment) else {
                return Err(entry);
            };
            segment_cell.get_or_init(|| (0..FIRST_SEGMENT << segment).map(|_| OnceLock::new()).collect())
        };
        // The slot is fresh: `index` was never published and writers are
        // serialised, so `set` cannot find it initialised.
        slots[offset].set(entry)?;
        self.count.store(index + 1, Ordering::Release);
        Ok(index)
    }

    /// Removes every entry, newest first. Needs exclusive access.
    pub(crate) fn drain_newest_first(&mut self) -> Vec<Entry> {
        // `&mut self`: no other thread can observe the count (a plain load
        // and store, which `loom`'s atomics also offer, unlike `get_mut`).
        let count = self.count.load(Ordering::Relaxed);
        self.count.store(0, Ordering::Relaxed);
        let mut drained = Vec::with_capacity(count);
        for index in (0..count).rev() {
            let (segment, offset) = locate(index);
            let slot = if segment == 0 {
                Some(&mut self.first[offset])
            } else {
                self.segments[segment].get_mut().map(|slots| &mut slots[offset])
            };
            if let Some(entry) = slot.and_then(OnceLock::take) {
                drained.push(entry);
            }
        }
        drained
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Drop one by one, newest first (a plain field drop would go oldest
        // first through the segments).
        for entry in self.drain_newest_first() {
            tracing::trace!(provider = &*entry.name, owned = entry.provider.is_owned(), "dropping provider");
            drop(entry);
        }
    }
}

/// A `OnceLock` whose publication `loom` can see: the value lives in a
/// `std` `OnceLock` (memory safety stays `std`'s), and a `loom` flag set with
/// `Release` after it, read with `Acquire` before it, carries the
/// happens-before edge the real `OnceLock` provides. A reader that finds
/// the flag unset gets `None`, as a real `OnceLock` would before its
/// initialisation is visible.
#[cfg(loom)]
mod loom_once {
    use loom::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering;

    pub(crate) struct OnceLock<T> {
        ready: AtomicBool,
        value: std::sync::OnceLock<T>,
    }

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            Self { ready: AtomicBool::new(false), value: std::sync::OnceLock::new() }
        }

        pub(crate) fn get(&self) -> Option<&T> {
            if self.ready.load(Ordering::Acquire) { self.value.get() } else { None }
        }

        pub(crate) fn set(&self, value: T) -> Result<(), T> {
            self.value.set(value)?;
            self.ready.store(true, Ordering::Release);
            Ok(())
        }

        pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
            if let Some(value) = self.get() {
                return value;
            }
            let value = self.value.get_or_init(init);
            self.ready.store(true, Ordering::Release);
            value
        }

        pub(crate) fn get_mut(&mut self) -> Option<&mut T> {
            self.value.get_mut()
        }

        pub(crate) fn take(&mut self) -> Option<T> {
            self.ready.store(false, Ordering::Relaxed);
            self.value.take()
        }
    }
}

/// The registry's publish/read protocol under `loom`
/// (`RUSTFLAGS="--cfg loom" cargo test -p xplug-manager --release --lib
/// registry_loom`, which `cargo xtask loom` runs).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use xplug_providers::FnTableProvider;

    fn entry(name: &'static str) -> Entry {
        let provider = FnTableProvider::new(name, []).expect("an empty table is valid");
        Entry { provider: Held::Shared(Arc::new(provider)), name: Arc::from(name) }
    }

    /// The names a reader sees: every counted entry must be there.
    fn snapshot(registry: &Registry) -> Vec<Arc<str>> {
        let count = registry.len();
        (0..count)
            .map(|index| {
                registry
                    .get(index)
                    .unwrap_or_else(|| panic!("entry {index} of {count} is not visible"))
                    .name
                    .clone()
            })
            .collect()
    }

    #[test]
    fn registry_loom_readers_see_every_counted_entry_across_a_segment_boundary() {
        loom::model(|| {
            let registry = loom::sync::Arc::new(Registry::new(None));
            // Fill the first segment but one, before any thread starts.
            for _ in 0..FIRST_SEGMENT - 1 {
                registry.push(entry("early")).ok().expect("unbounded");
            }
            let writer = {
                let registry = registry.clone();
                loom::thread::spawn(move || {
                    // Index 7 (last of segment 0), then 8 (allocates segment 1).
                    registry.push(entry("w1")).ok().expect("unbounded");
                    registry.push(entry("w2")).ok().expect("unbounded");
                })
            };
            let reader = {
                let registry = registry.clone();
                loom::thread::spawn(move || {
                    let first = snapshot(&registry);
                    let second = snapshot(&registry);
                    // Counts only grow, and a later read extends an earlier one.
                    assert!(second.len() >= first.len());
                    assert_eq!(&second[..first.len()], &first[..]);
                    let written: Vec<&str> =
                        second.iter().map(|name| &**name).filter(|name| name.starts_with('w')).collect();
                    assert!(written.is_empty() || written[0] == "w1", "registration order: {written:?}");
                })
            };
            writer.join().unwrap();
            reader.join().unwrap();
            assert_eq!(snapshot(&registry).len(), FIRST_SEGMENT + 1);
        });
    }

    #[test]
    fn registry_loom_two_writers_get_distinct_slots() {
        loom::model(|| {
            let registry = loom::sync::Arc::new(Registry::new(Some(2)));
            let spawn = |name: &'static str| {
                let registry = registry.clone();
                loom::thread::spawn(move || registry.push(entry(name)).ok())
            };
            let (a, b) = (spawn("a"), spawn("b"));
            let mut indices = [a.join().unwrap().unwrap(), b.join().unwrap().unwrap()];
            indices.sort_unstable();
            assert_eq!(indices, [0, 1]);
            let names = snapshot(&registry);
            assert!(names.iter().any(|n| &**n == "a") && names.iter().any(|n| &**n == "b"));
            // The bounded registry is full.
            assert!(registry.push(entry("c")).is_err());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_covers_indices_contiguously() {
        let mut expected = (0, 0);
        for index in 0..10_000 {
            let got = locate(index);
            assert_eq!(got, expected, "index {index}");
            expected = if got.1 + 1 == FIRST_SEGMENT << got.0 { (got.0 + 1, 0) } else { (got.0, got.1 + 1) };
        }
        // The last index of the address space still lands in a segment.
        assert!(locate(usize::MAX).0 < SEGMENTS);
    }

    #[test]
    fn get_reads_every_entry_across_segments() {
        struct Named(String);
        impl ImportProvider for Named {
            fn name(&self) -> &str {
                &self.0
            }
            fn resolve(
                &self,
                _: &mut xplug_providers::ResolveRequest<'_>,
            ) -> Result<xplug_providers::abi::Resolution, xplug_providers::Error> {
                Ok(xplug_providers::abi::Resolution::NONE)
            }
        }
        let registry = Registry::new(None);
        // 8 + 16 + 3 entries: three segments, the last one partly used.
        for i in 0..27 {
            let name: Arc<str> = Arc::from(format!("p{i}"));
            let entry = Entry { provider: Held::Shared(Arc::new(Named(name.to_string()))), name };
            assert_eq!(registry.push(entry).ok(), Some(i));
        }
        for count in [0, 1, 8, 9, 24, 25, 27] {
            // As the manager's walk reads them: newest first.
            let walked: Vec<(usize, String)> = (0..count)
                .rev()
                .map(|index| (index, registry.get(index).expect("published").name.to_string()))
                .collect();
            let expected: Vec<(usize, String)> = (0..count).rev().map(|i| (i, format!("p{i}"))).collect();
            assert_eq!(walked, expected, "count {count}");
        }
    }
}
