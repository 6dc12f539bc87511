//! The append-only provider registry that resolution reads without a lock.
//!
//! # Design
//!
//! Entries live in segments whose sizes double (8, 16, 32, ... entries).
//! The first segment is allocated with the registry (most managers hold a
//! handful of providers, and resolution then reads it without a lookup);
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
//! # Drop order
//!
//! Dropping the registry drops entries newest first, so plugins are unloaded
//! in reverse registration order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use xplug_providers::{ImportProvider, Plugin};

/// Entries in the first segment; segment `k` holds `FIRST_SEGMENT << k`.
const FIRST_SEGMENT: usize = 8;
/// Number of segments: enough for more entries than memory can hold.
const SEGMENTS: usize = usize::BITS as usize - 2;

/// One registered provider.
#[derive(Clone)]
pub(crate) struct Entry {
    /// The provider.
    pub(crate) provider: Arc<dyn ImportProvider>,
    /// The same provider when it is a loaded plugin (one allocation shared
    /// with `provider`): resolution calls the plugin's C entry point
    /// directly instead of going through the trait object.
    pub(crate) plugin: Option<Arc<Plugin>>,
    /// Its name, captured at registration.
    pub(crate) name: Arc<str>,
    /// True when the manager owns it as a plugin.
    pub(crate) owned: bool,
}

type Segment = Box<[OnceLock<Entry>]>;

/// Append-only, lock-free-to-read list of providers.
pub(crate) struct Registry {
    /// Segment 0, allocated up front.
    first: Box<[OnceLock<Entry>; FIRST_SEGMENT]>,
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
            first: Box::new(std::array::from_fn(|_| OnceLock::new())),
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
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Entry `index`, which must be below a count previously returned by
    /// [`Registry::len`]; `None` otherwise.
    pub(crate) fn get(&self, index: usize) -> Option<&Entry> {
        let (segment, offset) = locate(index);
        self.segment(segment)?.get(offset)?.get()
    }

    /// Segment `k`, if allocated.
    #[inline]
    fn segment(&self, k: usize) -> Option<&[OnceLock<Entry>]> {
        if k == 0 { Some(&self.first[..]) } else { self.segments.get(k)?.get().map(|slots| &slots[..]) }
    }

    /// Entries `0..count` newest first, each with its index (`None` for an
    /// entry that is not readable, which the publication argument rules out
    /// for a `count` from [`Registry::len`]). Looks each segment up once.
    pub(crate) fn newest_first(&self, count: usize) -> NewestFirst<'_> {
        NewestFirst { registry: self, remaining: count, segment: &[], segment_start: count }
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
        let count = *self.count.get_mut();
        *self.count.get_mut() = 0;
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

/// Iterator of [`Registry::newest_first`].
pub(crate) struct NewestFirst<'a> {
    registry: &'a Registry,
    /// Entries not yet returned: the next one is `remaining - 1`.
    remaining: usize,
    /// The segment holding the entries from `segment_start` up.
    segment: &'a [OnceLock<Entry>],
    segment_start: usize,
}

impl<'a> Iterator for NewestFirst<'a> {
    type Item = (usize, Option<&'a Entry>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let index = self.remaining.checked_sub(1)?;
        self.remaining = index;
        if index < self.segment_start {
            if index < FIRST_SEGMENT {
                // Most managers hold fewer than FIRST_SEGMENT providers.
                self.segment = &self.registry.first[..];
                self.segment_start = 0;
            } else {
                let (segment, offset) = locate(index);
                self.segment = self.registry.segment(segment).unwrap_or(&[]);
                self.segment_start = index - offset;
            }
        }
        Some((index, self.segment.get(index - self.segment_start).and_then(OnceLock::get)))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Drop one by one, newest first (a plain field drop would go oldest
        // first through the segments).
        for entry in self.drain_newest_first() {
            tracing::trace!(provider = &*entry.name, owned = entry.owned, "dropping provider");
            drop(entry);
        }
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
    fn newest_first_walks_every_entry_across_segments() {
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
            let entry =
                Entry { provider: Arc::new(Named(name.to_string())), plugin: None, name, owned: false };
            assert_eq!(registry.push(entry).ok(), Some(i));
        }
        for count in [0, 1, 8, 9, 24, 25, 27] {
            let walked: Vec<(usize, String)> = registry
                .newest_first(count)
                .map(|(index, entry)| (index, entry.expect("published").name.to_string()))
                .collect();
            let expected: Vec<(usize, String)> = (0..count).rev().map(|i| (i, format!("p{i}"))).collect();
            assert_eq!(walked, expected, "count {count}");
        }
    }
}
