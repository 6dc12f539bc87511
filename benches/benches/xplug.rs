//! xplug's benchmarks; `cargo xtask bench` runs them and prints the ratios.
//!
//! Group and function names are read back by `xtask/src/bench.rs`; keep
//! them in sync.

#![expect(missing_docs, reason = "`criterion_group!` generates an undocumented public function")]

use std::ffi::{CString, c_char, c_int, c_void};
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use xplug_abi::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EXPORT_NAME, EnvironmentV0, PluginV0, QueryFn,
    Resolution, ResolveParamsV0, Status, StatusCode, Version,
};
use xplug_benches::{
    SDK_PLUGIN, binary_search, build_strcmp_c_plugin, merge_walk, paired_estimate, paired_estimate_of,
    reference_table, request_names,
};
use xplug_manager::Manager;
use xplug_providers::{
    EMBEDDED_ELF, FnTableEntry, FnTableProvider, ImportProvider, LoadParamList, Loader, Plugin,
    ResolveRequest, STATIC, SYSTEM_LIBRARY, SymbolName,
};

/// Resolves `names` through `provider` into fresh slots.
fn resolve_once(
    provider: &dyn ImportProvider,
    names: &[SymbolName<'_>],
    fns: &mut [*mut c_void],
    contexts: &mut [*mut c_void],
) {
    fns.fill(std::ptr::null_mut());
    let mut request = ResolveRequest::new(names, fns, contexts).expect("equal lengths");
    let _ = black_box(provider.resolve(&mut request));
}

/// (1) Resolve cost per name: SDK resolver vs strcmp C plugin vs references.
fn resolve_per_name(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let c_path = build_strcmp_c_plugin(dir.path());
    // SAFETY: the C plugin was generated and compiled above; it is a v0 plugin.
    let c_plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&c_path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect("C plugin loads");
    // SAFETY: the SDK generated this query function; it obeys the v0 contract.
    let sdk_plugin =
        unsafe { STATIC.query_code("static plugin", SDK_PLUGIN.query()).load(&LoadParamList::new()) }
            .expect("SDK plugin loads");
    // The generated resolver itself, called through its raw v0 table (no
    // provider wrapper), loaded by hand.
    // SAFETY: the SDK generated this query function (v0 contract); the
    // environment is valid for the call and the plugin keeps no pointer to it.
    let (sdk_table, sdk_state) = unsafe {
        let table = SDK_PLUGIN.query()(Version::LATEST, std::ptr::null_mut()).cast::<PluginV0>().read();
        let environment = EnvironmentV0 {
            host_allocator: Allocator { self_: std::ptr::null_mut(), ctl: Some(malloc_ctl) },
        };
        let mut state = std::ptr::null_mut();
        assert!((table.load.expect("load"))(&environment, 0, std::ptr::null(), &mut state).is_ok());
        (table, state)
    };
    let sdk_resolve = sdk_table.resolve.expect("resolve");
    let table = reference_table();
    let mut group = c.benchmark_group("resolve_per_name");
    for count in [16usize, 256, 4096] {
        let names: Vec<CString> = request_names(count);
        let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
        let bare: Vec<&[u8]> = names.iter().map(|n| n.to_bytes()).collect();
        let mut fns = vec![std::ptr::null_mut(); count];
        let mut contexts = vec![std::ptr::null_mut(); count];
        // Each variant is checked once before it is measured, so the checks
        // hold even when a criterion filter skips the measurement.
        resolve_once(&sdk_plugin, &symbols, &mut fns, &mut contexts);
        assert!(fns.iter().all(|f| !f.is_null()), "the SDK plugin resolves every name");
        group.bench_with_input(BenchmarkId::new("sdk", count), &count, |b, _| {
            b.iter(|| resolve_once(&sdk_plugin, &symbols, &mut fns, &mut contexts));
        });
        let pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let raw_resolve = |fns: &mut [*mut c_void], contexts: &mut [*mut c_void]| {
            fns.fill(std::ptr::null_mut());
            let params = ResolveParamsV0 {
                count,
                symbol_names: pointers.as_ptr(),
                out_fn_ptrs: fns.as_mut_ptr(),
                out_fn_contexts: contexts.as_mut_ptr(),
            };
            let mut resolution = Resolution::NONE;
            // SAFETY: the loaded SDK plugin's resolve with `count` names and
            // two `count`-long slot arrays, valid across the call.
            black_box(unsafe { sdk_resolve(sdk_state, &params, &mut resolution) });
        };
        raw_resolve(&mut fns, &mut contexts);
        assert!(fns.iter().all(|f| !f.is_null()), "the raw SDK resolver resolves every name");
        group.bench_with_input(BenchmarkId::new("sdk_raw", count), &count, |b, _| {
            b.iter(|| raw_resolve(&mut fns, &mut contexts));
        });
        resolve_once(&c_plugin, &symbols, &mut fns, &mut contexts);
        assert!(fns.iter().all(|f| !f.is_null()), "the C plugin resolves every name");
        group.bench_with_input(BenchmarkId::new("c_strcmp", count), &count, |b, _| {
            b.iter(|| resolve_once(&c_plugin, &symbols, &mut fns, &mut contexts));
        });
        group.bench_with_input(BenchmarkId::new("merge_walk", count), &count, |b, _| {
            b.iter(|| {
                fns.fill(std::ptr::null_mut());
                merge_walk(&table, black_box(&bare), &mut fns);
            });
        });
        group.bench_with_input(BenchmarkId::new("binary_search", count), &count, |b, _| {
            b.iter(|| {
                fns.fill(std::ptr::null_mut());
                binary_search(&table, black_box(&bare), &mut fns);
            });
        });
    }
    group.finish();
    if let Some(unload) = sdk_table.unload {
        // SAFETY: the state from the successful load above, unloaded once.
        unsafe { unload(sdk_state) };
    }
}

unsafe extern "C" fn noop(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

/// `providers` function tables, provider `k` exporting `p{k}_0..p{k}_31`.
fn tables(providers: usize) -> Vec<Arc<FnTableProvider>> {
    (0..providers)
        .map(|k| {
            let entries: Vec<FnTableEntry> =
                (0..32).map(|i| FnTableEntry::new(format!("p{k}_{i:02}"), noop)).collect();
            Arc::new(
                FnTableProvider::new(
                    ["table0", "table1", "table2", "table3", "table4", "table5", "table6", "table7"][k],
                    entries,
                )
                .expect("valid table"),
            )
        })
        .collect()
}

/// (2) The manager over 1 and 8 providers vs calling the providers directly.
fn manager_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("manager");
    for providers in [1usize, 8] {
        let tables = tables(providers);
        let manager = Manager::new();
        for table in &tables {
            manager.register_provider(table.clone()).expect("unbounded manager");
        }
        // 8 names from every provider, so each provider is asked and fills its own.
        let mut names: Vec<CString> = (0..providers)
            .flat_map(|k| (0..8).map(move |i| CString::new(format!("p{k}_{:02}", i * 4)).expect("no NUL")))
            .collect();
        names.sort();
        let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
        let mut fns = vec![std::ptr::null_mut(); names.len()];
        let mut contexts = vec![std::ptr::null_mut(); names.len()];
        resolve_once(&manager, &symbols, &mut fns, &mut contexts);
        assert!(fns.iter().all(|f| !f.is_null()), "the manager resolves every name");
        group.bench_with_input(BenchmarkId::new("manager", providers), &providers, |b, _| {
            b.iter(|| resolve_once(&manager, &symbols, &mut fns, &mut contexts));
        });
        group.bench_with_input(BenchmarkId::new("direct_sum", providers), &providers, |b, _| {
            b.iter(|| {
                fns.fill(std::ptr::null_mut());
                let mut request =
                    ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("equal lengths");
                // Newest first, as the manager asks them.
                for table in tables.iter().rev() {
                    let _ = black_box(table.resolve(&mut request));
                }
            });
        });
        // The row itself: both sides in batches back to back, each with
        // its own slots, so machine load drifting between the two criterion
        // runs above does not skew the ratio.
        let (mut direct_fns, mut direct_contexts) = (fns.clone(), contexts.clone());
        let mut direct = || {
            direct_fns.fill(std::ptr::null_mut());
            let mut request =
                ResolveRequest::new(&symbols, &mut direct_fns, &mut direct_contexts).expect("equal lengths");
            for table in tables.iter().rev() {
                let _ = black_box(table.resolve(&mut request));
            }
        };
        let mut through_manager = || resolve_once(&manager, &symbols, &mut fns, &mut contexts);
        paired_estimate("manager", &format!("paired-{providers}"), &mut direct, &mut through_manager);
    }
    group.finish();
}

#[repr(C)]
struct AddArgs {
    a: i32,
    b: i32,
    out: i32,
}

// SAFETY: three `i32`s and no padding: any bytes are a value.
unsafe impl xplug_manager::AnyBitPattern for AddArgs {}

unsafe extern "C" fn add(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    // SAFETY: callers pass `AddArgs`.
    let args = unsafe { &mut *args.cast::<AddArgs>() };
    args.out = args.a.wrapping_add(args.b);
    0
}

/// (3) One import call through `ResolvedImports` vs a plain function pointer.
fn import_call(c: &mut Criterion) {
    let manager = Manager::new();
    let table = FnTableProvider::new("math", [FnTableEntry::new("add", add)]).expect("valid table");
    manager.register_provider(Arc::new(table)).expect("unbounded manager");
    let imports = manager.resolve_imports(["add"]).expect("resolves");
    let direct: xplug_abi::ImportFn = add;
    let mut group = c.benchmark_group("call");
    let mut args = AddArgs { a: 1, b: 2, out: 0 };
    let mut ran = false;
    // SAFETY: `add` takes `AddArgs`.
    let typed = unsafe { imports.typed::<AddArgs>("add") }.expect("resolved");
    group.bench_function("typed_import", |b| {
        ran = true;
        b.iter(|| {
            let typed = black_box(&typed);
            black_box(typed.call(&mut args));
        });
    });
    let handle = imports.import(0).expect("resolved");
    group.bench_function("resolved_import_handle", |b| {
        ran = true;
        b.iter(|| {
            let handle = black_box(&handle);
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe { handle.call(&mut args) });
        });
    });
    // The baseline makes the same call an executable makes through its own
    // import table: function and context both read through a pointer to a
    // table entry (here a `black_box`ed reference to a pair, as the handle
    // above is), then `fn(args, context, NULL)`.
    let entry = (direct, imports.context(0));
    group.bench_function("direct_fn_ptr", |b| {
        ran = true;
        b.iter(|| {
            let &(function, context) = black_box(&entry);
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe {
                function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut())
            });
        });
    });
    group.finish();
    // The calls ran unless a filter skipped every function of the group.
    assert_eq!(args.out, if ran { 3 } else { 0 }, "add computed {}", args.out);

    // Paired estimates (the rows `cargo xtask bench` prints): each call
    // kind in batches back to back with the direct call. A call costs a few
    // cycles, as much as the harness's own indirect call into the closure,
    // so each closure makes CALLS calls (each reading its function afresh
    // through `black_box`) and the times are per call. The loop count is
    // opaque (`black_box`), so no side's loop is unrolled: a dispatch loop
    // around an opaque call is not, and unrolling only the plain side
    // measured its loop overhead, not the checks (1.34x).
    const CALLS: u32 = 16;
    let (mut direct_args, mut handle_args, mut typed_args) =
        (AddArgs { a: 1, b: 2, out: 0 }, AddArgs { a: 1, b: 2, out: 0 }, AddArgs { a: 1, b: 2, out: 0 });
    let mut direct_call = || {
        for _ in 0..black_box(CALLS) {
            let &(function, context) = black_box(&entry);
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe {
                function(std::ptr::from_mut(&mut direct_args).cast(), context, std::ptr::null_mut())
            });
        }
    };
    let mut handle_call = || {
        for _ in 0..black_box(CALLS) {
            let handle = black_box(&handle);
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe { handle.call(&mut handle_args) });
        }
    };
    paired_estimate_of("call", "paired-handle", &mut direct_call, &mut handle_call, CALLS);
    let mut typed_call = || {
        for _ in 0..black_box(CALLS) {
            let typed = black_box(&typed);
            black_box(typed.call(&mut typed_args));
        }
    };
    paired_estimate_of("call", "paired-typed", &mut direct_call, &mut typed_call, CALLS);
    assert_eq!((direct_args.out, handle_args.out, typed_args.out), (3, 3, 3));
}

/// (11) One import call through the per-import profile's counting wrapper
/// (what `xplug run --profile` installs in every slot) vs the same plain
/// function-pointer call as row (3): the cost of profiling per call.
fn profiled_call(c: &mut Criterion) {
    use xplug_profile::{ImportProfiler, ProfileOptions};
    // The default options, as `xplug run --profile` uses them: the first
    // 1 000 calls are also kept as slices, every later one only counted.
    let profiler = ImportProfiler::new(ProfileOptions::default());
    let names = [SymbolName::new(c"add")];
    let (mut fns, mut contexts) = ([add as *mut c_void], [std::ptr::null_mut()]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
    assert_eq!(profiler.install(0, &mut request, |_| Some("math".to_owned())), 1);
    // SAFETY: the slot holds the profiler's wrapper, an import function,
    // valid while `profiler` lives (to the end of this function).
    let wrapper = unsafe { xplug_abi::import_fn_from_ptr(request.function(0)) }.expect("wrapped");
    let profiled_entry = (wrapper, request.context(0));
    let direct_entry: (xplug_abi::ImportFn, *mut c_void) = (add, std::ptr::null_mut());
    let mut group = c.benchmark_group("call");
    let mut args = AddArgs { a: 1, b: 2, out: 0 };
    group.bench_function("profiled_import", |b| {
        b.iter(|| {
            let &(function, context) = black_box(&profiled_entry);
            // SAFETY: the wrapper passes `AddArgs` on to `add`.
            black_box(unsafe {
                function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut())
            });
        });
    });
    group.finish();
    // Paired as row (3): CALLS calls per closure, times per call.
    const CALLS: u32 = 16;
    let (mut direct_args, mut profiled_args) =
        (AddArgs { a: 1, b: 2, out: 0 }, AddArgs { a: 1, b: 2, out: 0 });
    let mut direct_call = || {
        for _ in 0..black_box(CALLS) {
            let &(function, context) = black_box(&direct_entry);
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe {
                function(std::ptr::from_mut(&mut direct_args).cast(), context, std::ptr::null_mut())
            });
        }
    };
    let mut profiled = || {
        for _ in 0..black_box(CALLS) {
            let &(function, context) = black_box(&profiled_entry);
            // SAFETY: as above, through the wrapper.
            black_box(unsafe {
                function(std::ptr::from_mut(&mut profiled_args).cast(), context, std::ptr::null_mut())
            });
        }
    };
    paired_estimate_of("call", "paired-profiled", &mut direct_call, &mut profiled, CALLS);
    assert_eq!((direct_args.out, profiled_args.out), (3, 3));
    let profile = profiler.snapshot();
    assert!(profile.imports[0].calls > 0, "every call through the wrapper is counted");
}

/// The allocator of the hand-made load: C `malloc`/`free`.
unsafe extern "C" fn malloc_ctl(
    _: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout: *mut *mut c_void,
) -> Status {
    match command {
        AllocatorCommand::MALLOC | AllocatorCommand::CALLOC => {
            // SAFETY: MALLOC/CALLOC pass alloc params and a writable pointer.
            unsafe {
                let size = (*params.cast::<AllocatorAllocParams>()).byte_length;
                let block = libc::calloc(1, size.max(1));
                inout.write(block);
            }
            Status::OK
        }
        AllocatorCommand::FREE => {
            // SAFETY: FREE passes a block from MALLOC.
            unsafe { libc::free(inout.read()) };
            Status::OK
        }
        _ => Status::from_code(StatusCode::UNIMPLEMENTED),
    }
}

/// (4) `SYSTEM_LIBRARY.open` + `Code::load` + first resolve vs by hand.
fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let c_path = CString::new(path.to_str().expect("UTF-8 path")).expect("no NUL");
    let name = CString::new("c_add_i32").expect("no NUL");
    let mut group = c.benchmark_group("load");
    group.bench_function("system_library_plugin", |b| {
        b.iter(|| {
            // SAFETY: the minimal C plugin of this repository.
            let plugin: Plugin = unsafe {
                SYSTEM_LIBRARY
                    .open(&std::path::Path::new(&path).to_string_lossy())
                    .and_then(|code| code.load(&LoadParamList::new()))
            }
            .expect("loads");
            let names = [SymbolName::new(&name)];
            let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
            let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
            plugin.resolve(&mut request).expect("resolves");
            black_box(fns[0]);
        });
    });
    group.bench_function("raw_dlopen", |b| {
        b.iter(|| {
            // SAFETY: plain dlopen/dlsym/dlclose on the minimal C plugin, a
            // v0 plugin; every pointer used is checked or valid for the call.
            unsafe {
                let handle = libc::dlopen(c_path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
                assert!(!handle.is_null());
                let symbol = libc::dlsym(handle, EXPORT_NAME.as_ptr());
                assert!(!symbol.is_null());
                let query = std::mem::transmute::<*mut c_void, QueryFn>(symbol);
                let table = query(Version::LATEST, std::ptr::null_mut()).cast::<PluginV0>().read();
                let environment = EnvironmentV0 {
                    host_allocator: Allocator { self_: std::ptr::null_mut(), ctl: Some(malloc_ctl) },
                };
                let mut state = std::ptr::null_mut();
                let status = (table.load.expect("load"))(&environment, 0, std::ptr::null(), &mut state);
                assert!(status.is_ok());
                let names: [*const c_char; 1] = [name.as_ptr()];
                let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
                let params = ResolveParamsV0 {
                    count: 1,
                    symbol_names: names.as_ptr(),
                    out_fn_ptrs: fns.as_mut_ptr(),
                    out_fn_contexts: contexts.as_mut_ptr(),
                };
                let mut resolution = Resolution::NONE;
                let status = (table.resolve.expect("resolve"))(state, &params, &mut resolution);
                assert!(status.is_ok());
                black_box(fns[0]);
                (table.unload.expect("unload"))(state);
                libc::dlclose(handle);
            }
        });
    });
    group.finish();
}

/// (7) The same standalone plugin file loaded by xplug's embedded ELF
/// loader, by the OS loader and by IREE's embedded ELF loader: load + first
/// resolve + unload.
fn embedded_load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = xplug_fixtures::build_standalone_c_sample(dir.path());
    let name = CString::new("simple_mul_workgroup").expect("no NUL");
    let resolve = |plugin: &Plugin| {
        let names = [SymbolName::new(&name)];
        let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).expect("equal lengths");
        plugin.resolve(&mut request).expect("resolves");
        black_box(fns[0]);
    };
    let mut group = c.benchmark_group("embedded_load");
    group.bench_function("embedded_elf_plugin", |b| {
        b.iter(|| {
            // SAFETY: the repository's standalone C sample.
            let plugin = unsafe {
                EMBEDDED_ELF
                    .open(&std::path::Path::new(&path).to_string_lossy())
                    .and_then(|code| code.load(&LoadParamList::new()))
            }
            .expect("loads");
            resolve(&plugin);
        });
    });
    group.bench_function("system_library_plugin", |b| {
        b.iter(|| {
            // SAFETY: as above; the same file is also a valid shared library.
            let plugin = unsafe {
                SYSTEM_LIBRARY
                    .open(&std::path::Path::new(&path).to_string_lossy())
                    .and_then(|code| code.load(&LoadParamList::new()))
            }
            .expect("loads");
            resolve(&plugin);
        });
    });
    // The floor: the system calls xplug's loader makes for this file (open,
    // fstat, one read, close; one populated read-write mapping of the image,
    // the segments copied in, `mprotect` of the whole image to read-only and
    // of the code pages to read-execute, `munmap`) with nothing else: no
    // validation, relocation, plugin call or bookkeeping. Any loader that
    // copies the file into fresh pages with W^X protections and unmaps them
    // on unload pays at least this.
    let bytes = std::fs::read(&path).expect("the standalone sample");
    let plan = xplug_providers::embedded_elf::validate(&bytes).expect("valid for this host");
    let elf_start = plan.elf().start;
    let image_size = usize::try_from(plan.image_size()).expect("small image");
    // SAFETY: `sysconf` has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page size");
    let code = plan.segments().iter().find(|segment| segment.flags.execute).expect("a code segment");
    let code_pages = {
        let start = usize::try_from(code.image_offset).expect("small") / page * page;
        let end = usize::try_from(code.image_offset + code.mem_size).expect("small").div_ceil(page) * page;
        (start, end - start)
    };
    group.bench_function("syscall_floor", |b| {
        b.iter(|| {
            use std::io::Read as _;
            let mut file = std::fs::File::open(&path).expect("opens");
            let size = usize::try_from(file.metadata().expect("fstat").len()).expect("small");
            let mut bytes = vec![0u8; size];
            file.read_exact(&mut bytes).expect("reads");
            drop(file);
            // SAFETY: a fresh private anonymous mapping of `image_size`
            // bytes; every copy below stays inside it (the plan's segments
            // were validated to lie inside the image and the file); the
            // protection changes and the unmapping cover only this mapping.
            unsafe {
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    image_size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                    -1,
                    0,
                );
                assert_ne!(base, libc::MAP_FAILED);
                for segment in plan.segments() {
                    let start = elf_start + usize::try_from(segment.file_range.start).expect("small");
                    let end = elf_start + usize::try_from(segment.file_range.end).expect("small");
                    std::ptr::copy_nonoverlapping(
                        bytes[start..end].as_ptr(),
                        base.cast::<u8>().add(usize::try_from(segment.image_offset).expect("small")),
                        end - start,
                    );
                }
                assert_eq!(libc::mprotect(base, image_size, libc::PROT_READ), 0);
                let (offset, length) = code_pages;
                assert_eq!(
                    libc::mprotect(
                        base.cast::<u8>().add(offset).cast(),
                        length,
                        libc::PROT_READ | libc::PROT_EXEC
                    ),
                    0
                );
                black_box(base);
                libc::munmap(base, image_size);
            }
        });
    });
    group.bench_function("iree_embedded_elf", |b| {
        b.iter(|| {
            // SAFETY: as above.
            let plugin =
                unsafe { xplug_iree_reference::IreePlugin::embedded_elf(&path, &[]) }.expect("loads");
            let names = [SymbolName::new(&name)];
            let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
            let outcome = plugin.resolve(&names, &mut fns, &mut contexts).expect("equal lengths");
            assert_eq!(outcome.code, StatusCode::OK);
            black_box(fns[0]);
        });
    });
    group.finish();
}

/// `swap_scale_i32`'s args (`tests/c/swap_plugin.c`).
#[repr(C)]
struct ScaleArgs {
    value: i32,
    out: i32,
}

/// (12) Live swap: one import call through a swappable plugin's
/// trampoline (`docs/src/operating/swap.md`) vs the same build loaded as a plain plugin,
/// whose import resolves to the plugin's own function; both called as (3)
/// calls, from a resolved table. Two imports of `tests/c/swap_plugin.c`:
/// `swap_scale_i32` (one multiply: the call itself dominates, so the
/// difference is the indirection's cost per call) and
/// `simple_mul_workgroup` on one 64-element workgroup slice, what
/// `mul_call.mlir`'s dispatch calls (the plugin's work dominates).
fn swap_call(_: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = xplug_fixtures::build_swap_plugin(dir.path(), "swap_bench", 2, &[]);
    let spec = format!("embedded:{}", path.display());
    let plain = Manager::new();
    let swappable = Manager::new();
    // SAFETY: a plugin built from this repository.
    unsafe {
        plain.load_spec(&spec).expect("loads");
        swappable.load_swappable(&spec).expect("loads");
    }
    let names = ["swap_scale_i32", "simple_mul_workgroup"];
    let (plain, swappable) = (
        plain.resolve_imports(names).expect("resolves"),
        swappable.resolve_imports(names).expect("resolves"),
    );
    assert_ne!(plain.function(0), swappable.function(0), "the swappable side calls the trampoline");
    const CALLS: u32 = 16;

    let (mut plain_args, mut swap_args) = (ScaleArgs { value: 3, out: 0 }, ScaleArgs { value: 3, out: 0 });
    let (plain_scale, swap_scale) =
        (plain.import(0).expect("resolved"), swappable.import(0).expect("resolved"));
    let mut plain_call = || {
        for _ in 0..black_box(CALLS) {
            // SAFETY: `swap_scale_i32` takes a `ScaleArgs`.
            black_box(unsafe { black_box(&plain_scale).call(&mut plain_args) });
        }
    };
    let mut swap_call = || {
        for _ in 0..black_box(CALLS) {
            // SAFETY: as above.
            black_box(unsafe { black_box(&swap_scale).call(&mut swap_args) });
        }
    };
    paired_estimate_of("swap", "paired-scale", &mut plain_call, &mut swap_call, CALLS);
    assert_eq!((plain_args.out, swap_args.out), (6, 6));

    let lhs: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let rhs = vec![1.5f32; 64];
    let (mut plain_out, mut swap_out) = (vec![0f32; 64], vec![0f32; 64]);
    let (mut plain_args, mut swap_args) = (
        iree_sample_args::WorkgroupArgs::whole(&lhs, &rhs, &mut plain_out),
        iree_sample_args::WorkgroupArgs::whole(&lhs, &rhs, &mut swap_out),
    );
    let (plain_mul, swap_mul) = (plain.import(1).expect("resolved"), swappable.import(1).expect("resolved"));
    let mut plain_call = || {
        for _ in 0..black_box(CALLS) {
            // SAFETY: `simple_mul_workgroup` takes a `WorkgroupArgs` over
            // 64 live elements.
            black_box(unsafe { black_box(&plain_mul).call(&mut plain_args) });
        }
    };
    let mut swap_call = || {
        for _ in 0..black_box(CALLS) {
            // SAFETY: as above.
            black_box(unsafe { black_box(&swap_mul).call(&mut swap_args) });
        }
    };
    paired_estimate_of("swap", "paired-workgroup", &mut plain_call, &mut swap_call, CALLS);
    let expected: Vec<f32> = lhs.iter().map(|x| x * 1.5 * 2.0).collect();
    assert_eq!((&plain_out, &swap_out), (&expected, &expected));
}

criterion_group!(
    benches,
    resolve_per_name,
    manager_overhead,
    import_call,
    profiled_call,
    load,
    embedded_load,
    swap_call
);
criterion_main!(benches);
