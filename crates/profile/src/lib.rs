//! Per-import profiles: how often each resolved import is called and how
//! long its calls take, counted by a wrapper the host installs at resolve
//! time in place of the plugin's function (`docs/src/operating/profiles.md`).
//!
//! ```
//! use std::ffi::{c_int, c_void};
//! use xplug_profile::{ImportProfiler, ProfileOptions};
//! use xplug_providers::{ResolveRequest, SymbolName};
//!
//! unsafe extern "C" fn double(args: *mut c_void, _context: *mut c_void, _reserved: *mut c_void) -> c_int {
//!     // SAFETY: callers pass an `i32`, as the import's contract says.
//!     unsafe { *args.cast::<i32>() *= 2 };
//!     0
//! }
//!
//! // An executable's import table, resolved to `double`.
//! let names = [SymbolName::new(c"double")];
//! let (mut fns, mut contexts) = ([double as *mut c_void], [std::ptr::null_mut()]);
//! let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts)?;
//! let profiler = ImportProfiler::new(ProfileOptions::default());
//! assert_eq!(profiler.install(0, &mut request, |_| Some("doc".into())), 1);
//!
//! // The executable calls what the slot holds now: the profiler's wrapper.
//! // SAFETY: a filled slot holds an import function, valid while `profiler` lives.
//! let wrapped = unsafe { xplug_providers::abi::import_fn_from_ptr(request.function(0)) }.unwrap();
//! let mut value = 21;
//! // SAFETY: `double` takes an `i32`.
//! let status = unsafe { wrapped((&raw mut value).cast(), request.context(0), std::ptr::null_mut()) };
//! assert_eq!((status, value), (0, 42));
//!
//! let stats = &profiler.snapshot().imports[0];
//! assert_eq!((stats.name.as_str(), stats.calls), ("double", 1));
//! # Ok::<(), xplug_providers::Error>(())
//! ```
//!
//! Every import has one C signature, `int(void* params, void* context,
//! void* reserved)`. [`ImportProfiler::install`] replaces each filled slot
//! of a resolved request with one generic entry point whose `context` is a
//! record (`ProfiledImport`) owned by the profiler: the record holds the
//! function and context the resolution produced (the plugin's, or another
//! wrapper's) and the counters. The entry point reads the clock, calls the
//! pair, reads the clock again and counts the call in the calling thread's
//! own counters. Nothing is installed, and nothing costs anything, unless
//! a profiler is asked to.
//!
//! # Counting per thread
//!
//! Each thread that calls imports holds a small ordinal for as long as it
//! lives (taken from a process-wide pool on its first profiled call,
//! returned by its thread-local destructor, so ordinals stay as few as the
//! threads alive at once). A record has one counter block per ordinal,
//! allocated by that thread on its first call of that import and
//! published with a `Release` store; only the thread holding the ordinal
//! writes the block, so a call updates its counters with plain loads and
//! stores, no read-modify-write and no cache line shared with another
//! worker. A thread whose ordinal is beyond [`THREAD_BLOCKS`] (more
//! threads alive at once than that) counts in one block behind a mutex.
//!
//! Reading merges the blocks. The call count, failure count, total and
//! maximum of a block are written inside a sequence lock (the writer makes
//! the sequence odd, writes each figure with `Release`, makes it even with
//! `Release`; the reader loads the figures with `Acquire` and retries until
//! it sees the same even value before and after), so a read
//! while calls run sees them from one instant; histogram buckets and trace
//! slices are each exact counters or published entries (a slice is written
//! and then counted with a `Release` store, read up to the count loaded
//! with `Acquire`). A read after the calls ended (for IREE: after the
//! invocation returned, which waited for the workers) is exact.

use std::collections::BinaryHeap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use xplug_providers::ResolveRequest;
use xplug_providers::abi::ImportFn;

/// Threads alive at once that count in blocks of their own; more count in
/// one shared block behind a mutex.
pub const THREAD_BLOCKS: usize = 256;

/// Sub-buckets per power of two in the latency histogram: `2^SUB_BITS`,
/// so a bucket is at most 1/16 of its lower bound wide.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Durations of `2^MAX_EXPONENT` clock ticks or more (days) share the last
/// bucket (the maximum stays exact).
const MAX_EXPONENT: u32 = 48;
const BUCKETS: usize = (MAX_EXPONENT - SUB_BITS + 1) as usize * SUB;

/// How a profiler records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProfileOptions {
    /// At most this many calls of each import are kept as timed slices
    /// (the first ones, by start time) for a trace; every call is counted
    /// whatever this is. Each thread calling an import sets room for this
    /// many aside (24 bytes each) at its first call of it, so keep it to
    /// what a trace viewer can show (`xplug run` takes at most 1 000 000).
    pub slices_per_import: usize,
}

impl ProfileOptions {
    /// The default number of slices kept per import.
    pub const DEFAULT_SLICES: usize = 1000;

    /// Keep at most `slices` calls of each import as trace slices (0: none).
    #[must_use]
    pub fn slices_per_import(mut self, slices: usize) -> Self {
        self.slices_per_import = slices;
        self
    }
}

impl Default for ProfileOptions {
    fn default() -> Self {
        Self { slices_per_import: Self::DEFAULT_SLICES }
    }
}

/// Counts the calls of the imports it wrapped ([`ImportProfiler::install`])
/// and reads them back ([`ImportProfiler::snapshot`]).
///
/// The wrappers point into the profiler: keep it alive, at any address,
/// for as long as an executable may call what it installed (a device owns
/// its profiler and drops it after IREE released its executables).
///
/// ```
/// use std::ffi::{c_int, c_void};
/// use xplug_profile::{ImportProfiler, ProfileOptions};
/// use xplug_providers::{FnTableEntry, FnTableProvider, ImportProvider, RequestSlots};
///
/// unsafe extern "C" fn double(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
///     // SAFETY: callers pass an `i32`.
///     unsafe { *args.cast::<i32>() *= 2 };
///     0
/// }
///
/// let math = FnTableProvider::new("math", [FnTableEntry::new("double", double)])?;
/// let profiler = ImportProfiler::new(ProfileOptions::default().slices_per_import(2));
/// let mut slots = RequestSlots::for_names([c"double"]);
/// let mut request = slots.request();
/// math.resolve(&mut request)?;
/// assert_eq!(request.function(0), double as *mut c_void);
/// profiler.install(0, &mut request, |_| Some("math".to_owned()));
/// let (function, context) = (request.function(0), request.context(0));
/// assert_ne!(function, double as *mut c_void, "the slot now holds the profiler's wrapper");
///
/// // SAFETY: the slot holds an import function; the profiler is alive.
/// let function = unsafe { xplug_providers::abi::import_fn_from_ptr(function) }.unwrap();
/// let mut value = 1i32;
/// for _ in 0..5 {
///     // SAFETY: `double` takes an `i32`; the wrapper passes it on.
///     assert_eq!(unsafe { function((&raw mut value).cast(), context, std::ptr::null_mut()) }, 0);
/// }
/// assert_eq!(value, 32);
/// let profile = profiler.snapshot();
/// let stats = &profile.imports[0];
/// assert_eq!((stats.name.as_str(), stats.provider.as_deref(), stats.calls), ("double", Some("math"), 5));
/// assert_eq!(stats.slices.len(), 2, "at most 2 slices kept");
/// assert!(stats.percentile(0.5).unwrap() <= stats.max);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ImportProfiler {
    shared: Arc<Shared>,
    /// Boxed: the wrappers' contexts point at the records, which must not
    /// move when the list grows.
    #[expect(clippy::vec_box, reason = "each record's address is a wrapper's context and must not move")]
    imports: Mutex<Vec<Box<ProfiledImport>>>,
}

/// What every record of one profiler shares.
struct Shared {
    clock: quanta::Clock,
    /// The clock's reading when the profiler was made: time zero of slices.
    start: u64,
    options: ProfileOptions,
    /// Every thread that counted a call, for the trace's thread names.
    threads: Mutex<Vec<ProfiledThread>>,
}

impl std::fmt::Debug for ImportProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportProfiler")
            .field("options", &self.shared.options)
            .field("imports", &lock(&self.imports).len())
            .finish_non_exhaustive()
    }
}

impl ImportProfiler {
    /// A profiler with nothing installed; its clock starts now (the first
    /// profiler of a process calibrates the processor's counter against
    /// the system clock first, up to 0.2 s).
    #[must_use]
    pub fn new(options: ProfileOptions) -> Self {
        let clock = quanta::Clock::new();
        let start = clock.raw();
        Self {
            shared: Arc::new(Shared { clock, start, options, threads: Mutex::new(Vec::new()) }),
            imports: Mutex::new(Vec::new()),
        }
    }

    /// The options it records with.
    #[must_use]
    pub fn options(&self) -> ProfileOptions {
        self.shared.options
    }

    /// Puts the profiler's wrapper in every filled slot of `request`, an
    /// executable's resolved import table, and returns how many it
    /// wrapped. `executable` labels the table (IREE's loaders: the
    /// executable's ordinal on the device); `provider(index)` names who
    /// resolved slot `index`. The wrapper calls the function and context
    /// the slot held (a plugin's, or another host wrapper's), so install
    /// the profile last.
    ///
    /// The wrapped slots are valid while the profiler lives.
    pub fn install(
        &self,
        executable: usize,
        request: &mut ResolveRequest<'_>,
        provider: impl Fn(usize) -> Option<String>,
    ) -> usize {
        let mut imports = lock(&self.imports);
        let mut wrapped = 0;
        for (index, name) in request.names().iter().enumerate() {
            if !request.is_filled(index) {
                continue;
            }
            // SAFETY: a filled slot holds an import function, as every
            // provider writes one (`docs/src/reference/resolution.md#resolve-call`),
            // callable while the manager holding its provider lives.
            let Some(function) =
                (unsafe { xplug_providers::abi::import_fn_from_ptr(request.function(index)) })
            else {
                continue;
            };
            let record = Box::new(ProfiledImport {
                function,
                context: request.context(index),
                clock: self.shared.clock.clone(),
                blocks: (0..THREAD_BLOCKS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
                overflow: Mutex::new(None),
                shared: Arc::clone(&self.shared),
                executable,
                index,
                name: String::from_utf8_lossy(name.bare()).into_owned(),
                provider: provider(index),
            });
            let context = std::ptr::from_ref::<ProfiledImport>(&record).cast_mut().cast::<c_void>();
            request.wrap_filled(index, profiled_call, context);
            imports.push(record);
            wrapped += 1;
        }
        wrapped
    }

    /// Every wrapped import's figures so far, in the order they were
    /// installed, merged over the threads that called them.
    #[must_use]
    pub fn snapshot(&self) -> ImportProfile {
        let now = self.shared.clock.raw();
        let imports = lock(&self.imports).iter().map(|import| import.stats()).collect();
        let mut threads = lock(&self.shared.threads).clone();
        threads.sort_by_key(|thread| thread.id);
        ImportProfile { elapsed: self.shared.nanos(self.shared.start, now), imports, threads }
    }
}

/// One profile read: every wrapped import's figures.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ImportProfile {
    /// From the profiler's start to this read.
    pub elapsed: Duration,
    /// Each wrapped import, in the order installed (executable by
    /// executable, each in its import table's order).
    pub imports: Vec<ImportCallStats>,
    /// Every thread that made a profiled call (the trace's thread names).
    pub threads: Vec<ProfiledThread>,
}

impl ImportProfile {
    /// The time spent in every import, summed over threads.
    #[must_use]
    pub fn total(&self) -> Duration {
        self.imports.iter().map(|import| import.total).sum()
    }
}

/// A thread that made profiled calls.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProfiledThread {
    /// The operating system's thread id (Linux `gettid`).
    pub id: u32,
    /// Its name when it made its first profiled call (`/proc`'s `comm`,
    /// e.g. IREE's `iree-worker-0`).
    pub name: String,
}

/// One import's figures: every call counted, its latency distribution, and
/// the first calls as timed slices.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ImportCallStats {
    /// The executable's label given to [`ImportProfiler::install`].
    pub executable: usize,
    /// The import's position in its executable's table.
    pub index: usize,
    /// The import's name, without IREE's `?` for optional imports.
    pub name: String,
    /// The provider that resolved it, when known.
    pub provider: Option<String>,
    /// Calls made.
    pub calls: u64,
    /// Calls that returned non-zero (a failure, to IREE).
    pub failures: u64,
    /// Time spent in the calls, summed over threads.
    pub total: Duration,
    /// The longest call.
    pub max: Duration,
    /// The latency distribution.
    pub histogram: LatencyHistogram,
    /// The first calls by start time, at most
    /// [`ProfileOptions::slices_per_import`], sorted by start.
    pub slices: Vec<CallSlice>,
}

impl ImportCallStats {
    /// The mean call time (zero without calls).
    #[must_use]
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.calls) {
            Ok(0) => Duration::ZERO,
            Ok(calls) => self.total / calls,
            Err(_) => Duration::from_secs_f64(self.total.as_secs_f64() / self.calls as f64),
        }
    }

    /// The call time at quantile `q` (0.5: the median; 0.99: p99) from the
    /// histogram, at most 1/32 of its value off, never above
    /// [`ImportCallStats::max`]; `None` without calls.
    #[must_use]
    pub fn percentile(&self, q: f64) -> Option<Duration> {
        self.histogram.percentile(q).map(|value| value.min(self.max))
    }

    /// This import's time as a share of `run` (1.0: as long as the run;
    /// calls on several threads at once can add up to more).
    #[must_use]
    pub fn share_of(&self, run: Duration) -> f64 {
        if run.is_zero() { 0.0 } else { self.total.as_secs_f64() / run.as_secs_f64() }
    }
}

/// A log-linear latency histogram: 16 buckets per power of two of the
/// clock's ticks, so a bucket's width is at most 1/16 of its lower bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// The non-empty buckets, in increasing order.
    pub buckets: Vec<HistogramBucket>,
}

/// One bucket of a [`LatencyHistogram`]: the calls that took from `low` up
/// to (not including) `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistogramBucket {
    /// The bucket's lower bound.
    pub low: Duration,
    /// Its upper bound, exclusive.
    pub high: Duration,
    /// Calls in it.
    pub count: u64,
}

impl LatencyHistogram {
    /// Calls counted.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|bucket| bucket.count).sum()
    }

    /// The value at quantile `q` (clamped to 0..=1) by nearest rank: the
    /// middle of the bucket holding the `ceil(q * count)`-th call; `None`
    /// when empty.
    #[must_use]
    pub fn percentile(&self, q: f64) -> Option<Duration> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for bucket in &self.buckets {
            seen += bucket.count;
            if seen >= rank {
                return Some(bucket.low + (bucket.high - bucket.low) / 2);
            }
        }
        self.buckets.last().map(|bucket| bucket.low)
    }
}

/// One timed call, for a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallSlice {
    /// When it started, from the profiler's start.
    pub start: Duration,
    /// How long it took.
    pub duration: Duration,
    /// The thread that made it ([`ProfiledThread::id`]).
    pub thread: u32,
}

/// What the wrapper of one import reads: the pair it calls, the clock, the
/// counter blocks of each thread; and what the profile names it by.
struct ProfiledImport {
    function: ImportFn,
    context: *mut c_void,
    clock: quanta::Clock,
    /// Counter blocks by thread ordinal ([`THREAD_BLOCKS`] of them), each
    /// written by its thread only. Every array here is allocated on the
    /// heap directly: IREE's workers run imports on stacks of some 32 KiB.
    blocks: Box<[AtomicPtr<Counters>]>,
    /// The block of threads beyond [`THREAD_BLOCKS`], written under the lock.
    overflow: Mutex<Option<Box<Counters>>>,
    shared: Arc<Shared>,
    executable: usize,
    index: usize,
    name: String,
    provider: Option<String>,
}

// SAFETY: the function and context are what a provider resolved; the
// provider contract (`docs/src/reference/resolution.md#thread-safety`) makes an import
// callable from any thread, concurrently. Everything else is atomics,
// mutexes and immutable data.
unsafe impl Send for ProfiledImport {}
// SAFETY: as above; shared use only reads the immutable fields and goes
// through the atomics' protocol (the module's documentation).
unsafe impl Sync for ProfiledImport {}

impl std::fmt::Debug for ProfiledImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfiledImport")
            .field("executable", &self.executable)
            .field("name", &self.name)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Drop for ProfiledImport {
    fn drop(&mut self) {
        for block in &mut *self.blocks {
            let block = std::mem::replace(block.get_mut(), std::ptr::null_mut());
            if !block.is_null() {
                // SAFETY: a non-NULL block came from `Box::into_raw` in
                // `record_cold` and is freed only here, once.
                drop(unsafe { Box::from_raw(block) });
            }
        }
    }
}

/// The entry point every profiled slot holds; `context` is its
/// `ProfiledImport`.
///
/// # Safety
/// `context` is a record an [`ImportProfiler`] installed and still owns;
/// the other arguments are what the import takes.
unsafe extern "C" fn profiled_call(
    params: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int {
    // SAFETY: the caller passes the context the profiler installed with
    // this function, a record the profiler keeps alive (the caller's
    // promise) and never moves (boxed).
    let import = unsafe { &*context.cast::<ProfiledImport>().cast_const() };
    let start = import.clock.raw();
    // SAFETY: the pair the resolution produced, called as the executable
    // called the wrapper.
    let result = unsafe { (import.function)(params, import.context, reserved) };
    let end = import.clock.raw();
    import.record(start, end, result);
    result
}

impl ProfiledImport {
    /// Counts one call in the calling thread's block. No operation here
    /// can panic (no unwrap, no indexing without `get`); the cold part,
    /// which allocates and locks, catches panics itself.
    #[inline(always)]
    fn record(&self, start: u64, end: u64, result: c_int) {
        let ticks = end.saturating_sub(start);
        let thread = THREAD.try_with(|thread| (thread.ordinal, thread.id)).ok();
        if let Some((ordinal, id)) = thread
            && let Some(block) = self.blocks.get(ordinal)
        {
            let counters = block.load(Ordering::Acquire);
            // SAFETY: a non-NULL block was published by `record_cold` from
            // a live box freed only when `self` drops; only this thread
            // (the one holding `ordinal`) writes it.
            if let Some(counters) = unsafe { counters.as_ref() }
                && counters.writer.load(Ordering::Relaxed) == id
            {
                counters.record(start, ticks, result, id);
                return;
            }
        }
        self.record_cold(thread, start, ticks, result);
    }

    /// [`ProfiledImport::record`] for a thread's first call of this import,
    /// or for a thread without a block of its own.
    #[cold]
    #[inline(never)]
    fn record_cold(&self, thread: Option<(usize, u32)>, start: u64, ticks: u64, result: c_int) {
        // Nothing unwinds into the executable: a panic (none is expected)
        // loses this call's count.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let id = thread.map_or_else(current_thread_id, |(_, id)| id);
            self.shared.note_thread(id);
            match thread.and_then(|(ordinal, _)| self.blocks.get(ordinal)) {
                Some(block) => {
                    let mut counters = block.load(Ordering::Acquire);
                    if counters.is_null() {
                        counters =
                            Box::into_raw(Box::new(Counters::new(self.shared.options.slices_per_import)));
                        // Release: a reader that loads the pointer sees the
                        // initialised block.
                        block.store(counters, Ordering::Release);
                    }
                    // SAFETY: published above or before (by a thread that
                    // held this ordinal and has ended); this thread is its
                    // one writer now.
                    let counters = unsafe { &*counters };
                    // A thread taking over the ordinal of one that ended
                    // is named in the profile once, here.
                    counters.writer.store(id, Ordering::Relaxed);
                    counters.record(start, ticks, result, id);
                }
                None => {
                    let mut overflow = lock(&self.overflow);
                    overflow
                        .get_or_insert_with(|| Box::new(Counters::new(self.shared.options.slices_per_import)))
                        .record(start, ticks, result, id);
                }
            }
        }));
    }

    /// The figures merged over every block.
    fn stats(&self) -> ImportCallStats {
        let mut tally = Tally::default();
        for block in &*self.blocks {
            let counters = block.load(Ordering::Acquire);
            if !counters.is_null() {
                // SAFETY: published by `record_cold`, freed only when `self`
                // drops; reading goes through the atomics only.
                tally.add(unsafe { &*counters });
            }
        }
        if let Some(counters) = lock(&self.overflow).as_deref() {
            tally.add(counters);
        }
        let shared = &self.shared;
        tally.slices.sort_by_key(|slice| slice.0);
        tally.slices.truncate(shared.options.slices_per_import);
        let buckets = tally
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(index, &count)| {
                let (low, high) = bucket_bounds(index);
                HistogramBucket { low: shared.ticks(low), high: shared.ticks(high), count }
            })
            .collect();
        ImportCallStats {
            executable: self.executable,
            index: self.index,
            name: self.name.clone(),
            provider: self.provider.clone(),
            calls: tally.calls,
            failures: tally.failures,
            total: shared.ticks(tally.total),
            max: shared.ticks(tally.max),
            histogram: LatencyHistogram { buckets },
            slices: tally
                .slices
                .iter()
                .map(|&(start, ticks, thread)| CallSlice {
                    start: shared.nanos(shared.start, start),
                    duration: shared.ticks(ticks),
                    thread,
                })
                .collect(),
        }
    }
}

impl Shared {
    /// `ticks` of the clock as a duration.
    fn ticks(&self, ticks: u64) -> Duration {
        Duration::from_nanos(self.clock.delta_as_nanos(0, ticks))
    }

    /// From reading `from` to reading `to` (zero when `to` is earlier).
    fn nanos(&self, from: u64, to: u64) -> Duration {
        Duration::from_nanos(self.clock.delta_as_nanos(from, to))
    }

    /// Remembers thread `id` and its name, once.
    fn note_thread(&self, id: u32) {
        let mut threads = lock(&self.threads);
        if !threads.iter().any(|thread| thread.id == id) {
            let name = std::fs::read_to_string("/proc/thread-self/comm")
                .map_or_else(|_| format!("thread {id}"), |name| name.trim_end().to_owned());
            threads.push(ProfiledThread { id, name });
        }
    }
}

/// One thread's counters of one import.
struct Counters {
    /// The thread writing it (a later thread may take over the ordinal of
    /// one that ended), so that each thread is named once.
    writer: AtomicU32,
    /// Calls, failures, total and maximum, under the sequence lock.
    totals: Totals,
    /// [`BUCKETS`] of them.
    buckets: Box<[AtomicU64]>,
    /// Slices written so far (published with `Release`).
    slices_len: AtomicUsize,
    slices: Box<[SliceCell]>,
}

/// One timed call: start and length in clock ticks, and the thread.
struct SliceCell {
    start: AtomicU64,
    ticks: AtomicU64,
    thread: AtomicU32,
}

// The size `ProfileOptions::slices_per_import` documents.
const _: () = assert!(size_of::<SliceCell>() == 24);

/// A single writer's increment: a load and a store, no read-modify-write.
#[inline(always)]
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
}

impl Counters {
    fn new(slices: usize) -> Self {
        Self {
            writer: AtomicU32::new(0),
            totals: Totals::new(),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            slices_len: AtomicUsize::new(0),
            slices: (0..slices)
                .map(|_| SliceCell {
                    start: AtomicU64::new(0),
                    ticks: AtomicU64::new(0),
                    thread: AtomicU32::new(0),
                })
                .collect(),
        }
    }

    /// Counts a call; only the block's one writer calls this.
    #[inline(always)]
    fn record(&self, start: u64, ticks: u64, result: c_int, thread: u32) {
        self.totals.record(ticks, result != 0);
        if let Some(bucket) = self.buckets.get(bucket_of(ticks)) {
            bump(bucket, 1);
        }
        let len = self.slices_len.load(Ordering::Relaxed);
        if let Some(cell) = self.slices.get(len) {
            cell.start.store(start, Ordering::Relaxed);
            cell.ticks.store(ticks, Ordering::Relaxed);
            cell.thread.store(thread, Ordering::Relaxed);
            self.slices_len.store(len + 1, Ordering::Release);
        }
    }
}

/// The four figures of a block that a read takes from one instant: calls,
/// failures, total and maximum, in clock ticks, written under a sequence
/// lock (the module's documentation). Under `--cfg loom` its atomics are
/// `loom`'s, and `profile_loom` model-checks the protocol.
struct Totals {
    /// Odd while the writer updates the four fields below.
    sequence: SeqAtomic,
    calls: SeqAtomic,
    failures: SeqAtomic,
    total: SeqAtomic,
    max: SeqAtomic,
}

#[cfg(not(loom))]
use std::sync::atomic::AtomicU64 as SeqAtomic;

#[cfg(loom)]
use loom::sync::atomic::AtomicU64 as SeqAtomic;

/// [`bump`] for the sequence-locked fields: the store is `Release`, so a
/// reader whose `Acquire` load sees it also sees the odd sequence stored
/// before it (a plain store on x86-64, as `Relaxed` is).
#[inline(always)]
fn bump_locked(counter: &SeqAtomic, by: u64) {
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(by), Ordering::Release);
}

impl Totals {
    fn new() -> Self {
        Self {
            sequence: SeqAtomic::new(0),
            calls: SeqAtomic::new(0),
            failures: SeqAtomic::new(0),
            total: SeqAtomic::new(0),
            max: SeqAtomic::new(0),
        }
    }

    /// Counts a call of `ticks`; only the block's one writer calls this.
    #[inline(always)]
    fn record(&self, ticks: u64, failed: bool) {
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence.store(sequence.wrapping_add(1), Ordering::Relaxed);
        // Each field below is stored with `Release`: a reader that loads
        // one of the new values (with `Acquire`) then sees the odd
        // sequence or a later one, and retries.
        bump_locked(&self.calls, 1);
        bump_locked(&self.total, ticks);
        if failed {
            bump_locked(&self.failures, 1);
        }
        if ticks > self.max.load(Ordering::Relaxed) {
            self.max.store(ticks, Ordering::Release);
        }
        self.sequence.store(sequence.wrapping_add(2), Ordering::Release);
    }

    /// One attempt at a read: the four figures, if no write overlapped it.
    fn try_read(&self) -> Option<[u64; 4]> {
        self.try_read_sequenced().map(|(_, figures)| figures)
    }

    /// [`Totals::try_read`] with the (even) sequence number the figures
    /// belong to: twice the number of calls recorded before them.
    fn try_read_sequenced(&self) -> Option<(u64, [u64; 4])> {
        let before = self.sequence.load(Ordering::Acquire);
        let figures = [
            self.calls.load(Ordering::Acquire),
            self.failures.load(Ordering::Acquire),
            self.total.load(Ordering::Acquire),
            self.max.load(Ordering::Acquire),
        ];
        let after = self.sequence.load(Ordering::Relaxed);
        (before.is_multiple_of(2) && after == before).then_some((before, figures))
    }

    /// The four figures from one instant. A writer holds the lock for a
    /// few stores, so a retry soon falls between two calls; the retries
    /// are bounded, so that a reader never spins for ever, and the last
    /// read then holds each figure's value at some instant of the read,
    /// which is all the bound gives up.
    #[cfg(not(loom))]
    fn read(&self) -> [u64; 4] {
        for _ in 0..100_000 {
            if let Some(figures) = self.try_read() {
                return figures;
            }
            std::hint::spin_loop();
        }
        [
            self.calls.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
            self.max.load(Ordering::Relaxed),
        ]
    }

    /// Under `loom`, one attempt or the fields as they are (the model
    /// checks [`Totals::try_read`]).
    #[cfg(loom)]
    fn read(&self) -> [u64; 4] {
        self.try_read().unwrap_or_default()
    }
}

/// Counters merged over blocks, in clock ticks.
struct Tally {
    calls: u64,
    failures: u64,
    total: u64,
    max: u64,
    buckets: Vec<u64>,
    /// (start, ticks, thread).
    slices: Vec<(u64, u64, u32)>,
}

impl Default for Tally {
    fn default() -> Self {
        Self { calls: 0, failures: 0, total: 0, max: 0, buckets: vec![0; BUCKETS], slices: Vec::new() }
    }
}

impl Tally {
    /// Adds one block, read under its sequence lock.
    fn add(&mut self, counters: &Counters) {
        let [calls, failures, total, max] = counters.totals.read();
        self.calls += calls;
        self.failures += failures;
        self.total = self.total.saturating_add(total);
        self.max = self.max.max(max);
        for (sum, bucket) in self.buckets.iter_mut().zip(&*counters.buckets) {
            *sum += bucket.load(Ordering::Relaxed);
        }
        let len = counters.slices_len.load(Ordering::Acquire);
        self.slices.extend(counters.slices.iter().take(len).map(|cell| {
            (
                cell.start.load(Ordering::Relaxed),
                cell.ticks.load(Ordering::Relaxed),
                cell.thread.load(Ordering::Relaxed),
            )
        }));
    }
}

/// The histogram bucket of a duration of `ticks`.
#[inline(always)]
fn bucket_of(ticks: u64) -> usize {
    let value = ticks.min((1 << MAX_EXPONENT) - 1);
    if value < SUB as u64 {
        return value as usize;
    }
    // `value` has at least SUB_BITS + 1 significant bits: its top bit
    // (exponent) and the SUB_BITS bits under it (sub-bucket).
    let exponent = 63 - value.leading_zeros();
    let sub = (value >> (exponent - SUB_BITS)) as usize & (SUB - 1);
    (exponent - SUB_BITS + 1) as usize * SUB + sub
}

/// Bucket `index`'s bounds in ticks: `low..high`.
fn bucket_bounds(index: usize) -> (u64, u64) {
    if index < SUB {
        return (index as u64, index as u64 + 1);
    }
    let exponent = (index / SUB) as u32 + SUB_BITS - 1;
    let shift = exponent - SUB_BITS;
    let low = ((SUB + index % SUB) as u64) << shift;
    (low, low + (1 << shift))
}

/// The calling thread's ordinal (its counter block in every record) and
/// id, held for the thread's life.
struct ThreadIdentity {
    ordinal: usize,
    id: u32,
}

thread_local! {
    static THREAD: ThreadIdentity = ThreadIdentity::claim();
}

/// The ordinals of live threads: the next never used, and those returned.
struct Ordinals {
    next: usize,
    free: BinaryHeap<std::cmp::Reverse<usize>>,
}

static ORDINALS: Mutex<Ordinals> = Mutex::new(Ordinals { next: 0, free: BinaryHeap::new() });

impl ThreadIdentity {
    /// The smallest ordinal no live thread holds. The pool's mutex orders
    /// the last writes of a thread that returned an ordinal before the
    /// first writes of the thread that takes it next, so every block has
    /// one writer at a time.
    fn claim() -> Self {
        Self { ordinal: lock(&ORDINALS).take(), id: current_thread_id() }
    }
}

impl Drop for ThreadIdentity {
    fn drop(&mut self) {
        lock(&ORDINALS).give(self.ordinal);
    }
}

impl Ordinals {
    /// The smallest ordinal not taken.
    fn take(&mut self) -> usize {
        match self.free.pop() {
            Some(std::cmp::Reverse(ordinal)) => ordinal,
            None => {
                self.next += 1;
                self.next - 1
            }
        }
    }

    /// Returns `ordinal`, taken before.
    fn give(&mut self, ordinal: usize) {
        self.free.push(std::cmp::Reverse(ordinal));
    }
}

/// The operating system's id of the calling thread.
fn current_thread_id() -> u32 {
    // SAFETY: `gettid` has no preconditions and cannot fail.
    let id = unsafe { libc::gettid() };
    u32::try_from(id).unwrap_or_default()
}

/// A mutex's guard, whether or not a panic poisoned it (every value behind
/// these mutexes is valid at every step).
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_duration_in_order_and_narrowly() {
        let mut last = 0;
        for ticks in (0..100_000u64).chain([1 << 20, (1 << 32) + 12_345, (1 << 47) + 1, u64::MAX]) {
            let index = bucket_of(ticks);
            assert!(index < BUCKETS, "{ticks} -> {index}");
            assert!(index >= last || ticks >= 1 << 20, "buckets follow durations: {ticks}");
            last = index;
            let (low, high) = bucket_bounds(index);
            if ticks < 1 << MAX_EXPONENT {
                assert!(low <= ticks && ticks < high, "{ticks} in {low}..{high}");
                assert!((high - low) * 16 <= low.max(16), "{low}..{high} narrow");
            } else {
                assert_eq!(index, BUCKETS - 1);
            }
        }
        assert_eq!(bucket_bounds(BUCKETS - 1).1, 1 << MAX_EXPONENT);
    }

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let bucket = |low, count| HistogramBucket {
            low: Duration::from_nanos(low),
            high: Duration::from_nanos(low + 2),
            count,
        };
        let histogram = LatencyHistogram { buckets: vec![bucket(100, 98), bucket(200, 1), bucket(300, 1)] };
        assert_eq!(histogram.percentile(0.5), Some(Duration::from_nanos(101)));
        assert_eq!(histogram.percentile(0.98), Some(Duration::from_nanos(101)));
        assert_eq!(histogram.percentile(0.99), Some(Duration::from_nanos(201)));
        assert_eq!(histogram.percentile(1.0), Some(Duration::from_nanos(301)));
        assert_eq!(histogram.percentile(0.0), Some(Duration::from_nanos(101)));
        assert_eq!(LatencyHistogram::default().percentile(0.5), None);
    }

    unsafe extern "C" fn sleepy(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
        // SAFETY: the tests pass a `u64` of microseconds.
        let micros = unsafe { *args.cast::<u64>() };
        std::thread::sleep(Duration::from_micros(micros));
        c_int::from(micros == 0)
    }

    /// A profiler over one `sleepy` import, and the context of its
    /// wrapper as an exposed address (threads share it).
    fn profiled(options: ProfileOptions) -> (ImportProfiler, usize) {
        let profiler = ImportProfiler::new(options);
        let names = [xplug_providers::SymbolName::new(c"?sleepy")];
        let mut fns = [sleepy as *mut c_void];
        let mut contexts = [std::ptr::null_mut()];
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        assert_eq!(profiler.install(3, &mut request, |_| Some("test".into())), 1);
        assert_eq!(request.function(0), profiled_call as *mut c_void, "the wrapper is installed");
        let context = request.context(0).expose_provenance();
        (profiler, context)
    }

    /// Calls the wrapper as an executable would.
    fn call(context: usize, micros: u64) -> c_int {
        let mut micros = micros;
        // SAFETY: `sleepy` takes a `u64`; the profiler owning the context
        // outlives every call of these tests.
        unsafe {
            profiled_call(
                (&raw mut micros).cast(),
                std::ptr::with_exposed_provenance_mut(context),
                std::ptr::null_mut(),
            )
        }
    }

    #[test]
    fn calls_on_several_threads_add_up_and_time_what_they_took() {
        let (profiler, context) = profiled(ProfileOptions::default().slices_per_import(5));
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        assert_eq!(call(context, 200), 0);
                    }
                });
            }
        });
        assert_eq!(call(context, 0), 1, "the plugin's result passes through");
        let profile = profiler.snapshot();
        let stats = &profile.imports[0];
        assert_eq!((stats.executable, stats.index, stats.name.as_str()), (3, 0, "sleepy"));
        assert_eq!(stats.provider.as_deref(), Some("test"));
        assert_eq!((stats.calls, stats.failures), (101, 1));
        assert_eq!(stats.histogram.count(), 101);
        // Each sleeping call took at least its 200 µs.
        assert!(stats.total >= Duration::from_micros(100 * 200), "{:?}", stats.total);
        assert!(stats.percentile(0.5).unwrap() >= Duration::from_micros(190), "{stats:?}");
        assert!(stats.max >= Duration::from_micros(200));
        assert!(stats.mean() >= Duration::from_micros(190));
        assert!(profile.elapsed >= Duration::from_micros(25 * 200));
        // Five slices, the earliest, sorted, from the threads that ran.
        assert_eq!(stats.slices.len(), 5);
        assert!(stats.slices.windows(2).all(|pair| pair[0].start <= pair[1].start));
        assert!(stats.slices.iter().all(|slice| profile.threads.iter().any(|t| t.id == slice.thread)));
        assert_eq!(profile.threads.len(), 5, "four workers and this thread: {:?}", profile.threads);
    }

    #[test]
    fn no_slices_when_none_are_asked_for() {
        let (profiler, context) = profiled(ProfileOptions::default().slices_per_import(0));
        for _ in 0..3 {
            call(context, 1);
        }
        let profile = profiler.snapshot();
        assert_eq!(profile.imports[0].calls, 3);
        assert!(profile.imports[0].slices.is_empty());
    }

    #[test]
    fn ordinals_are_the_smallest_free_ones() {
        let mut ordinals = Ordinals { next: 0, free: BinaryHeap::new() };
        assert_eq!([ordinals.take(), ordinals.take(), ordinals.take(), ordinals.take()], [0, 1, 2, 3]);
        ordinals.give(2);
        ordinals.give(1);
        assert_eq!([ordinals.take(), ordinals.take(), ordinals.take()], [1, 2, 4]);
    }
}

/// The sequence lock under `loom` (`RUSTFLAGS="--cfg loom" cargo test -p
/// xplug-profile --release --lib profile_loom`, which `cargo xtask loom`
/// runs): a read that passes its sequence check sees the four figures of
/// one instant, whatever the interleaving with the writer.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    #[test]
    fn profile_loom_a_read_sees_the_figures_of_one_instant() {
        loom::model(|| {
            let totals = loom::sync::Arc::new(Totals::new());
            let writer = {
                let totals = totals.clone();
                loom::thread::spawn(move || {
                    totals.record(5, false);
                    totals.record(7, true);
                })
            };
            // Before either call, after the first, after both: a read that
            // passes its check holds the figures of the instant its
            // sequence number names, not older ones nor a mix. The reader
            // is a thread of its own: read from the model's main thread,
            // loom 0.7 explored a single interleaving of this writer.
            const INSTANTS: [[u64; 4]; 3] = [[0, 0, 0, 0], [1, 0, 5, 5], [2, 1, 12, 7]];
            let reader = {
                let totals = totals.clone();
                loom::thread::spawn(move || {
                    if let Some((sequence, figures)) = totals.try_read_sequenced() {
                        assert_eq!(
                            figures,
                            INSTANTS[(sequence / 2) as usize],
                            "a torn or stale read passed the check"
                        );
                    }
                })
            };
            reader.join().unwrap();
            writer.join().unwrap();
            assert_eq!(totals.try_read(), Some(INSTANTS[2]));
        });
    }
}
