//! Fixtures for xplug's benchmarks (`benches/xplug.rs`, run by
//! `cargo xtask bench`): a generated SDK plugin with [`EXPORTS`] imports, the
//! same exports as a C plugin that resolves IREE-sample style (one
//! `strcmp` per export per name), and two in-process reference resolvers.

use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char, c_int, c_void};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};

use xplug_iree::CImportProvider;
use xplug_iree_reference::{IreeManager, IreePlugin};
use xplug_manager::Manager;
use xplug_manager::providers::{ResolveRequest, SymbolName};
use xplug_sdk::ImportArgs;

/// Number of exports of both generated plugins.
pub const EXPORTS: usize = 4096;

/// Args of every generated import: it writes its own index.
#[derive(Debug, Default, ImportArgs)]
#[repr(C)]
pub struct BenchArgs {
    /// Output.
    pub value: i32,
}

include!(concat!(env!("OUT_DIR"), "/sdk_plugin.rs"));

/// The generated SDK plugin.
pub use sdk_plugin::PLUGIN as SDK_PLUGIN;

/// The name of export `i`.
#[must_use]
pub fn export_name(i: usize) -> String {
    format!("import_{i:04}")
}

/// `count` names spread evenly over the sorted exports, sorted.
#[must_use]
pub fn request_names(count: usize) -> Vec<CString> {
    let step = (EXPORTS / count.max(1)).max(1);
    (0..count).map(|k| CString::new(export_name((k * step) % EXPORTS)).expect("no NUL")).collect()
}

/// Writes a C plugin with the same exports as [`SDK_PLUGIN`] that resolves
/// the way IREE's samples do, and compiles it with `cc -O2` into `dir`.
#[must_use]
pub fn build_strcmp_c_plugin(dir: &Path) -> PathBuf {
    let mut code = String::from(
        "#include <string.h>\n#include \"xplug/executable_plugin.h\"\n\
         typedef struct { int value; } params_t;\n",
    );
    for i in 0..EXPORTS {
        let _ = writeln!(
            code,
            "static int f{i}(void* p, void* c, void* r) {{ (void)c; (void)r; ((params_t*)p)->value = {i}; return 0; }}"
        );
    }
    code.push_str("static const char* const names[] = {\n");
    for i in 0..EXPORTS {
        let _ = writeln!(code, "  \"{}\",", export_name(i));
    }
    code.push_str("};\nstatic void* const fns[] = {\n");
    for i in 0..EXPORTS {
        let _ = writeln!(code, "  (void*)f{i},");
    }
    let _ = write!(
        code,
        "}};\n\
static iree_hal_executable_plugin_status_t load(const iree_hal_executable_plugin_environment_v0_t* e, size_t n, const iree_hal_executable_plugin_string_pair_t* p, void** out) {{ (void)e; (void)n; (void)p; *out = NULL; return iree_hal_executable_plugin_ok_status(); }}\n\
static void unload(void* self) {{ (void)self; }}\n\
static iree_hal_executable_plugin_status_t resolve(void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params, iree_hal_executable_plugin_resolution_t* out_resolution) {{\n\
  (void)self; *out_resolution = 0; int missing = 0;\n\
  for (size_t i = 0; i < params->count; ++i) {{\n\
    if (params->out_fn_ptrs[i]) continue;\n\
    const char* name = params->symbol_names[i];\n\
    int optional = name[0] == '?'; if (optional) ++name;\n\
    int found = 0;\n\
    for (size_t j = 0; j < {EXPORTS}; ++j) {{\n\
      if (strcmp(name, names[j]) == 0) {{ params->out_fn_ptrs[i] = fns[j]; params->out_fn_contexts[i] = NULL; found = 1; break; }}\n\
    }}\n\
    if (!found) {{ if (optional) *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL; else missing = 1; }}\n\
  }}\n\
  return missing ? iree_hal_executable_plugin_status_from_code(IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND) : iree_hal_executable_plugin_ok_status();\n\
}}\n\
IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t** iree_hal_executable_plugin_query(iree_hal_executable_plugin_version_t max_version, void* reserved) {{\n\
  (void)reserved;\n\
  static const iree_hal_executable_plugin_header_t header = {{ .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST, .name = \"bench_c_strcmp\", .description = \"4096 exports, strcmp resolver\", .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE, .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND }};\n\
  static const iree_hal_executable_plugin_v0_t plugin = {{ .header = &header, .load = load, .unload = unload, .resolve = resolve }};\n\
  return max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1 ? NULL : (const iree_hal_executable_plugin_header_t**)&plugin;\n\
}}\n"
    );
    xplug_fixtures::build_c_plugin_from_code(&code, dir, "bench_c_strcmp", &["-O2"])
}

/// An import function used by the reference resolvers' table.
unsafe extern "C" fn reference_import(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

/// The sorted export table the in-process references walk.
#[must_use]
pub fn reference_table() -> Vec<(Vec<u8>, *mut c_void)> {
    (0..EXPORTS).map(|i| (export_name(i).into_bytes(), reference_import as *mut c_void)).collect()
}

/// Reference 1: one merge pass over sorted names and the sorted table.
pub fn merge_walk(table: &[(Vec<u8>, *mut c_void)], names: &[&[u8]], fns: &mut [*mut c_void]) {
    let mut j = 0;
    for (name, slot) in names.iter().zip(fns.iter_mut()) {
        while j < table.len() && table[j].0.as_slice() < *name {
            j += 1;
        }
        if j < table.len() && table[j].0.as_slice() == *name && slot.is_null() {
            *slot = table[j].1;
        }
    }
}

/// Reference 2: a binary search of the table per name.
pub fn binary_search(table: &[(Vec<u8>, *mut c_void)], names: &[&[u8]], fns: &mut [*mut c_void]) {
    for (name, slot) in names.iter().zip(fns.iter_mut()) {
        if let Ok(j) = table.binary_search_by(|entry| entry.0.as_slice().cmp(name))
            && slot.is_null()
        {
            *slot = table[j].1;
        }
    }
}

/// Batch length (iterations) so one batch of a pair lasts about 20 µs: far
/// above the clock's resolution, short against the machine's load changes.
pub fn batch_length(a: &mut dyn FnMut(), b: &mut dyn FnMut()) -> u64 {
    let mut probes = 1u32;
    loop {
        let probe = Instant::now();
        for _ in 0..probes {
            a();
            b();
        }
        let elapsed = probe.elapsed().as_nanos();
        if elapsed >= 100_000 || probes >= 1 << 16 {
            let per_pair = elapsed / u128::from(probes);
            return u64::try_from((20_000 / per_pair.max(1)).clamp(1, 4096)).expect("at most 4096");
        }
        probes *= 4;
    }
}

/// The paired estimate of a row: for about two seconds, a batch of `a` and
/// a batch of `b` run back to back (alternating which goes first); each
/// pair gives one ratio `b / a` measured under the same machine load. The
/// medians of the per-iteration times and of the ratios are written to
/// `target/criterion/<group>/<stem>.json`, where `cargo xtask bench` reads
/// them. On a shared machine the load changes between
/// criterion's separate runs of `a` and `b`; the pairs cancel that drift.
///
/// When each call of `a` and `b` performs `operations` operations (a
/// closure that repeats a cheap operation, so the harness's own call into
/// the closure does not dominate it), the times are per operation.
pub fn paired_estimate(group: &str, stem: &str, a: &mut dyn FnMut(), b: &mut dyn FnMut()) {
    paired_estimate_of(group, stem, a, b, 1);
}

/// [`paired_estimate`] for closures that each perform `operations`
/// operations per call; the times written are per operation.
pub fn paired_estimate_of(
    group: &str,
    stem: &str,
    a: &mut dyn FnMut(),
    b: &mut dyn FnMut(),
    operations: u32,
) {
    let estimate = measure_pair(a, b, operations, Duration::from_secs(2));
    write_paired_estimate(group, stem, &estimate);
}

/// Writes `estimate` to `target/criterion/<group>/<stem>.json` (under
/// `CARGO_TARGET_DIR` when set), the file `cargo xtask bench` and
/// `cargo xtask bench-layouts` read.
///
/// # Panics
/// When the file cannot be written.
pub fn write_paired_estimate(group: &str, stem: &str, estimate: &PairedEstimate) {
    let json = format!(
        "{{\"a_ns\": {}, \"b_ns\": {}, \"ratio_b_over_a\": {}, \"pairs\": {}, \"batch\": {}}}\n",
        estimate.a_ns, estimate.b_ns, estimate.ratio, estimate.pairs, estimate.batch
    );
    let dir = xplug_fixtures::target_dir(&xplug_fixtures::workspace_root()).join("criterion").join(group);
    let file = dir.join(format!("{stem}.json"));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&file, json))
        .unwrap_or_else(|error| panic!("cannot write the paired estimate {}: {error}", file.display()));
}

/// What [`measure_pair`] found: medians over the pairs of batches.
#[derive(Clone, Copy, Debug)]
pub struct PairedEstimate {
    /// Median time of one operation of `a`, in nanoseconds.
    pub a_ns: f64,
    /// Median time of one operation of `b`, in nanoseconds.
    pub b_ns: f64,
    /// Median of the per-pair ratios `b / a`.
    pub ratio: f64,
    /// Number of pairs of batches measured.
    pub pairs: usize,
    /// Calls of each closure per batch.
    pub batch: u64,
}

/// For about `duration` (and at least 21 pairs), a batch of `a` and a batch
/// of `b` back to back, alternating which goes first; each pair gives one
/// ratio `b / a` under the same machine load. Each call of `a` and `b`
/// performs `operations` operations.
pub fn measure_pair(
    a: &mut dyn FnMut(),
    b: &mut dyn FnMut(),
    operations: u32,
    duration: Duration,
) -> PairedEstimate {
    let batch = batch_length(a, b);
    #[expect(clippy::cast_precision_loss, reason = "a batch holds at most 4096 iterations")]
    let per_batch = batch as f64 * f64::from(operations);
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        start.elapsed().as_secs_f64() * 1e9 / per_batch
    };
    let (mut a_ns, mut b_ns, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline || ratios.len() < 21 {
        let (ta, tb) = if ratios.len() % 2 == 0 {
            let ta = time(a);
            (ta, time(b))
        } else {
            let tb = time(b);
            (time(a), tb)
        };
        a_ns.push(ta);
        b_ns.push(tb);
        ratios.push(tb / ta);
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    PairedEstimate {
        a_ns: median(&mut a_ns),
        b_ns: median(&mut b_ns),
        ratio: median(&mut ratios),
        pairs: ratios.len(),
        batch,
    }
}

/// Measures two resolvers *interleaved*: every measured batch of `a` runs
/// next to a batch of `b` of the same length (in alternating order), and
/// `which` says whose time is returned. Both sides of a row therefore see
/// the same machine load, however it drifts during the run (this machine is
/// shared), and their ratio compares like with like.
pub fn interleaved(iters: u64, a: &mut dyn FnMut(), b: &mut dyn FnMut(), which: Which) -> Duration {
    // Batches of about 20 µs, so reading the clock costs well under 1 %.
    let batch = batch_length(a, b);
    let mut total = Duration::ZERO;
    let mut done = 0;
    let mut a_first = true;
    while done < iters {
        let n = batch.min(iters - done);
        let run = |f: &mut dyn FnMut()| {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            start.elapsed()
        };
        let (time_a, time_b) = if a_first {
            let time_a = run(a);
            (time_a, run(b))
        } else {
            let time_b = run(b);
            (run(a), time_b)
        };
        total += match which {
            Which::A => time_a,
            Which::B => time_b,
        };
        a_first = !a_first;
        done += n;
    }
    total
}

/// Whose time [`interleaved`] returns.
#[derive(Clone, Copy)]
pub enum Which {
    /// The first closure.
    A,
    /// The second closure.
    B,
}

/// Records `group/{a_name,b_name}[/parameter]` in criterion, measured
/// interleaved, and writes the paired estimate of `b / a` (`paired[-parameter].json`).
pub fn pair(
    c: &mut Criterion,
    name: &str,
    parameter: Option<usize>,
    (a_name, a): (&str, &mut dyn FnMut()),
    (b_name, b): (&str, &mut dyn FnMut()),
) {
    let id = |side: &str| match parameter {
        Some(parameter) => BenchmarkId::new(side, parameter),
        None => BenchmarkId::from_parameter(side),
    };
    let mut group = c.benchmark_group(name);
    let mut selected = false;
    group.bench_function(id(a_name), |bencher| {
        selected = true;
        bencher.iter_custom(|iters| interleaved(iters, a, b, Which::A));
    });
    group.bench_function(id(b_name), |bencher| {
        selected = true;
        bencher.iter_custom(|iters| interleaved(iters, a, b, Which::B));
    });
    group.finish();
    if selected {
        let stem = match parameter {
            Some(parameter) => format!("paired-{parameter}"),
            None => "paired".to_owned(),
        };
        paired_estimate(name, &stem, a, b);
    }
}

/// The names and slots of one row (8) case, shared by every side of its
/// pair, with the slots moved to another place on every resolve.
///
/// IREE's loaders allocate one block per executable, its function slots
/// followed by its context slots, zeroed, and call the provider at once
/// (`iree_hal_executable_library_initialize_imports`); so does every
/// resolve here. When each side of a pair had arrays of its own, at fixed
/// places, which side got the better-placed memory was the allocator's
/// choice, and these machines are sensitive to placement (see docs/src/design/benchmarks.md,
/// notes on row (8)). Here both sides use the same memory, and each resolve
/// uses the next of [`PLACEMENTS`] places, one cache line apart over a
/// 4 KiB page, as a loader's allocation lands wherever the allocator puts
/// it; a batch of the paired measurement spans several rounds of them.
pub struct LoaderSlots<'a> {
    names: &'a [*const c_char],
    /// A page of slots and room for one request beyond it.
    slots: RefCell<Box<[*mut c_void]>>,
    /// The offset (in slots) of the next resolve's function slots; its
    /// context slots follow them, as a loader's one allocation holds both.
    next: Cell<usize>,
}

/// The places a [`LoaderSlots`] cycles through: every cache line of a 4 KiB
/// page.
pub const PLACEMENTS: usize = 4096 / 64;

/// Slots per cache line.
const SLOTS_PER_LINE: usize = 64 / size_of::<*mut c_void>();

impl<'a> LoaderSlots<'a> {
    /// Empty slots for `names` (NUL-terminated strings that live for `'a`,
    /// as `CString::as_ptr` gives them).
    #[must_use]
    pub fn new(names: &'a [*const c_char]) -> Self {
        let len = PLACEMENTS * SLOTS_PER_LINE + 2 * names.len();
        Self {
            names,
            slots: RefCell::new(vec![std::ptr::null_mut(); len].into_boxed_slice()),
            next: Cell::new(0),
        }
    }

    /// One resolve as IREE's loaders make it: both slot arrays cleared,
    /// then `provider`'s C call over the names and slots.
    ///
    /// # Panics
    /// When the provider returns a status (a name did not resolve), or when
    /// called from inside [`LoaderSlots::with_cleared`].
    pub fn loader_call(&self, provider: CImportProvider<'_>) {
        let status = self.with_cleared(|names, fns, contexts| {
            let mut resolution = xplug_manager::providers::abi::Resolution::NONE;
            // SAFETY: a live provider (its owner outlives the borrow in
            // `CImportProvider`); `names` holds NUL-terminated strings and
            // both slot arrays its length (`with_cleared`).
            unsafe {
                (provider.resolve)(
                    provider.self_,
                    names.len(),
                    names.as_ptr(),
                    fns.as_mut_ptr(),
                    contexts.as_mut_ptr(),
                    &mut resolution,
                )
            }
        });
        assert!(black_box(status).is_ok(), "the benchmark's names all resolve");
    }

    /// Runs `resolve` over the names and both slot arrays (one slot per
    /// name each) at the next placement, cleared first: the start of every
    /// resolve of a row.
    ///
    /// # Panics
    /// When called from inside `resolve` (the slots are borrowed).
    pub fn with_cleared<R>(
        &self,
        resolve: impl FnOnce(&[*const c_char], &mut [*mut c_void], &mut [*mut c_void]) -> R,
    ) -> R {
        let mut slots = self.slots.borrow_mut();
        let start = self.next.get();
        self.next.set((start + SLOTS_PER_LINE) % (PLACEMENTS * SLOTS_PER_LINE));
        let slots = &mut slots[start..start + 2 * self.names.len()];
        slots.fill(std::ptr::null_mut());
        let (fns, contexts) = slots.split_at_mut(self.names.len());
        resolve(self.names, fns, contexts)
    }
}

/// One case of row (8): the example plugin loaded (its library name), the
/// suffix of the case's criterion groups, and the names one resolve asks
/// for.
#[derive(Clone, Copy, Debug)]
pub struct LoaderCase {
    /// The example plugin (`xplug_fixtures::plugins::library_file_name`).
    pub plugin: &'static str,
    /// The case's name: `iree_loader_call_{row}`, `iree_fresh_request_{row}`.
    pub row: &'static str,
    /// The imports one resolve asks for.
    pub names: &'static [&'static str],
}

/// Row (8)'s cases: the C example and the SDK example with 1 and 4 names.
pub const LOADER_CASES: [LoaderCase; 3] = [
    LoaderCase { plugin: "c_sample", row: "c_plugin", names: &["simple_mul_workgroup"] },
    LoaderCase { plugin: "sample_standalone", row: "sdk_1", names: &["simple_mul_workgroup"] },
    LoaderCase {
        plugin: "sample_standalone",
        row: "sdk_4",
        names: &["dot", "saxpy", "simple_add_workgroup", "simple_mul_workgroup"],
    },
];

/// Everything one row (8) case resolves with: the case's plugin loaded by
/// IREE's manager and by xplug's, the provider `xplug-iree` installs over
/// the latter, and the case's names as C strings.
pub struct LoaderFixture {
    /// IREE's manager holding the plugin (the anchor).
    pub iree: IreeManager,
    /// xplug's manager holding the plugin.
    pub manager: Manager,
    /// The provider `xplug-iree` installs in IREE's loaders, over `manager`
    /// (boxed: its `{self, resolve}` pair points at it).
    pub provider: Box<xplug_iree::IreeImportProvider>,
    names: Vec<CString>,
    pointers: Vec<*const c_char>,
}

impl LoaderFixture {
    /// `case`'s plugin from `plugin_dir` (the example plugins' output
    /// directory), loaded on both sides.
    ///
    /// # Panics
    /// When the plugin does not load, or a name holds a NUL.
    #[must_use]
    pub fn new(case: &LoaderCase, plugin_dir: &Path) -> Self {
        let path = plugin_dir.join(xplug_fixtures::plugins::library_file_name(case.plugin));
        // IREE's manager loads the plugin first, then xplug's.
        let iree = iree_manager(&path);
        let manager = xplug_manager(&path);
        let provider = Box::new(xplug_iree::IreeImportProvider::new(manager.clone()));
        let names: Vec<CString> =
            case.names.iter().map(|name| CString::new(*name).expect("no NUL")).collect();
        let pointers = names.iter().map(|name| name.as_ptr()).collect();
        Self { iree, manager, provider, names, pointers }
    }

    /// Empty slots for the case's names, which every side resolves into.
    #[must_use]
    pub fn slots(&self) -> LoaderSlots<'_> {
        LoaderSlots::new(&self.pointers)
    }

    /// The case's names as a Rust runtime passes them to `Manager::resolve`.
    #[must_use]
    pub fn symbols(&self) -> Vec<SymbolName<'_>> {
        self.names.iter().map(|name| SymbolName::new(name)).collect()
    }
}

/// `Manager::resolve` on a fresh `ResolveRequest` over the next block of
/// `slots`, as a Rust runtime makes one per executable, checked as a
/// runtime checks it (`expect`: the resolution kept, the error on its own
/// path): row (8)'s xplug side of the fresh-request pair.
///
/// # Panics
/// When `symbols` and the slots differ in length, or a name does not
/// resolve.
#[inline]
pub fn fresh_resolve(slots: &LoaderSlots<'_>, symbols: &[SymbolName<'_>], manager: &Manager) {
    slots.with_cleared(|_, fns, contexts| {
        let mut request = ResolveRequest::new(symbols, fns, contexts).expect("one slot per name");
        black_box(manager.resolve(&mut request).expect("the benchmark's names all resolve"));
    });
}

/// IREE's own plugin manager holding the plugin file at `plugin`, as the
/// anchor side of rows (8) to (10) loads it.
///
/// # Panics
/// When IREE cannot create the manager or load the plugin.
#[must_use]
pub fn iree_manager(plugin: &Path) -> IreeManager {
    let manager = IreeManager::new(1).expect("IREE's manager");
    // SAFETY: the benchmarks load only this workspace's example plugins.
    let plugin = unsafe { IreePlugin::from_file(plugin, &[]) }.expect("IREE loads the plugin");
    manager.register_plugin(plugin).expect("IREE registers the plugin");
    manager
}

/// xplug's manager holding the plugin file at `plugin`: xplug's side of
/// rows (8) to (10).
///
/// # Panics
/// When the plugin does not load.
#[must_use]
pub fn xplug_manager(plugin: &Path) -> Manager {
    // SAFETY: as in `iree_manager`.
    unsafe { Manager::from_specs([plugin.display().to_string()]) }.expect("xplug loads the plugin")
}

/// xplug's manager holding the plugins of `specs`, loaded in order (the
/// `instr_loop` example's row (5) side).
///
/// # Panics
/// When a plugin does not load.
#[must_use]
pub fn xplug_manager_of(specs: &[String]) -> Manager {
    // SAFETY: the benchmarks load only this workspace's plugins.
    unsafe { Manager::from_specs(specs) }.expect("xplug loads the plugins")
}

/// `names` resolved through `manager` into a table.
///
/// # Panics
/// When the manager cannot resolve them.
#[must_use]
pub fn resolve_imports(manager: &Manager, names: &[&str]) -> xplug_manager::ResolvedImports {
    manager.resolve_imports(names.iter().copied()).expect("resolves")
}

/// Two managers over the swap plugin at `path` (embedded ELF): one that
/// loaded it as a plain plugin, one as a swappable plugin (row (12)).
///
/// # Panics
/// When a side does not load it.
#[must_use]
pub fn swap_managers(path: &Path) -> (Manager, Manager) {
    let spec = format!("embedded:{}", path.display());
    let (plain, swappable) = (Manager::new(), Manager::new());
    // SAFETY: a plugin built from this repository.
    unsafe {
        plain.load_spec(&spec).expect("loads");
        swappable.load_swappable(&spec).expect("loads");
    }
    (plain, swappable)
}

/// Runs `body` with `function` wrapped by a per-import profiler (default
/// options, as `xplug run --profile` installs it): `body` gets the
/// wrapper and its context (row (13)).
///
/// # Panics
/// When the profiler does not wrap the import.
pub fn profiled_add(function: xplug_abi::ImportFn, body: impl FnOnce(xplug_abi::ImportFn, *mut c_void)) {
    use xplug_profile::{ImportProfiler, ProfileOptions};
    let profiler = ImportProfiler::new(ProfileOptions::default());
    let names = [SymbolName::new(c"add")];
    let (mut fns, mut contexts) = ([function as *mut c_void], [std::ptr::null_mut()]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
    assert_eq!(profiler.install(0, &mut request, |_| Some("math".to_owned())), 1);
    // SAFETY: the slot holds the profiler's wrapper, an import function,
    // valid while `profiler` lives (to the end of this function).
    let wrapper = unsafe { xplug_abi::import_fn_from_ptr(request.function(0)) }.expect("wrapped");
    body(wrapper, request.context(0));
}
