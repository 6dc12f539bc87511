//! Drives a generated plugin through its raw v0 entry points, the way a C
//! host does: query, header, load with a counting host allocator, resolve,
//! call imports, unload; and proves panics never cross the C boundary.

use std::ffi::{CStr, c_char, c_void};
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use xplug_sdk::abi::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EnvironmentV0, Features, Header, PluginV0, Resolution,
    ResolveParamsV0, Sanitizer, Status, StatusCode, StringPair, StringView, Version, import_fn_from_ptr,
};
use xplug_sdk::{Environment, Error, ImportArgs, ImportError, LoadParams, PluginState};

/// Args of every test import: two inputs and a result.
#[derive(ImportArgs)]
#[repr(C)]
pub struct BinOp {
    /// Left operand.
    pub a: i32,
    /// Right operand.
    pub b: i32,
    /// Result.
    pub out: i32,
}

/// Test state: a multiplier, plus switches that make later calls panic.
pub struct Tester {
    multiplier: i32,
    panic_in_resolve: bool,
    hidden: Option<String>,
    _allocation: xplug_sdk::HostBox<[u8; 64]>,
}

impl PluginState for Tester {
    fn load(env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
        if params.get("panic") == Some("load") {
            panic!("load was told to panic");
        }
        Ok(Self {
            multiplier: params.parse("multiplier")?.unwrap_or(1),
            panic_in_resolve: params.get("panic") == Some("resolve"),
            hidden: params.get("hide").map(str::to_owned),
            // A second host allocation owned by the state, freed on unload.
            _allocation: env.host_allocator().boxed([7u8; 64])?,
        })
    }

    fn provides(&self, symbol: &str) -> bool {
        assert!(!self.panic_in_resolve, "resolve was told to panic");
        self.hidden.as_deref() != Some(symbol)
    }
}

#[xplug_sdk::plugin(name = "tester", description = "entry point tests", state = Tester)]
mod tester {
    use super::*;

    #[import("mul_i32")]
    fn mul(args: &mut BinOp, state: &Tester) -> Result<(), ImportError> {
        args.out = args.a * args.b * state.multiplier;
        Ok(())
    }

    #[import]
    fn add_i32(args: &mut BinOp) -> i32 {
        if args.a < 0 {
            panic!("add_i32 was given a negative number");
        }
        args.out = args.a + args.b;
        0
    }

    #[import("checked_div_i32")]
    fn div(args: &mut BinOp) -> Result<(), ImportError> {
        args.out = args.a.checked_div(args.b).ok_or(ImportError::INVALID_ARGUMENT)?;
        Ok(())
    }
}

#[xplug_sdk::plugin(name = "stateless", features(standalone), sanitizer = "address")]
mod stateless {
    use super::*;

    #[import]
    fn zeta(args: &mut BinOp) {
        args.out = 26;
    }

    #[import]
    fn alpha(args: &mut BinOp) {
        args.out = 1;
    }
}

/// Twenty imports whose names share prefixes and straddle the hash's 8-byte
/// chunks, so a one-name request takes the hash index and a full one the
/// sorted walk. Each import writes its position in `MANY`.
#[xplug_sdk::plugin(name = "many")]
mod many {
    use super::*;

    #[import("a")]
    fn f0(args: &mut BinOp) {
        args.out = 0;
    }

    #[import("ab")]
    fn f1(args: &mut BinOp) {
        args.out = 1;
    }

    #[import("abc")]
    fn f2(args: &mut BinOp) {
        args.out = 2;
    }

    #[import("abcdefg")]
    fn f3(args: &mut BinOp) {
        args.out = 3;
    }

    #[import("abcdefgh")]
    fn f4(args: &mut BinOp) {
        args.out = 4;
    }

    #[import("abcdefghi")]
    fn f5(args: &mut BinOp) {
        args.out = 5;
    }

    #[import("abcdefghijklmnop")]
    fn f6(args: &mut BinOp) {
        args.out = 6;
    }

    #[import("abcdefghijklmnopq")]
    fn f7(args: &mut BinOp) {
        args.out = 7;
    }

    #[import("simple_mul_workgroup")]
    fn f8(args: &mut BinOp) {
        args.out = 8;
    }

    #[import("simple_mul_workgroup_f16")]
    fn f9(args: &mut BinOp) {
        args.out = 9;
    }

    #[import("simple_add")]
    fn f10(args: &mut BinOp) {
        args.out = 10;
    }

    #[import("b")]
    fn f11(args: &mut BinOp) {
        args.out = 11;
    }

    #[import("ba")]
    fn f12(args: &mut BinOp) {
        args.out = 12;
    }

    #[import("z")]
    fn f13(args: &mut BinOp) {
        args.out = 13;
    }

    #[import("zz_last")]
    fn f14(args: &mut BinOp) {
        args.out = 14;
    }

    #[import("x86_avx2_dot")]
    fn f15(args: &mut BinOp) {
        args.out = 15;
    }

    #[import("x86_avx512_dot")]
    fn f16(args: &mut BinOp) {
        args.out = 16;
    }

    #[import("arm_sve_dot")]
    fn f17(args: &mut BinOp) {
        args.out = 17;
    }

    #[import("arm_neon_dot")]
    fn f18(args: &mut BinOp) {
        args.out = 18;
    }

    #[import("riscv_v_dot")]
    fn f19(args: &mut BinOp) {
        args.out = 19;
    }
}
/// The symbols of `many`, in declaration order.
const MANY: [&CStr; 20] = [
    c"a",
    c"ab",
    c"abc",
    c"abcdefg",
    c"abcdefgh",
    c"abcdefghi",
    c"abcdefghijklmnop",
    c"abcdefghijklmnopq",
    c"simple_mul_workgroup",
    c"simple_mul_workgroup_f16",
    c"simple_add",
    c"b",
    c"ba",
    c"z",
    c"zz_last",
    c"x86_avx2_dot",
    c"x86_avx512_dot",
    c"arm_sve_dot",
    c"arm_neon_dot",
    c"riscv_v_dot",
];

// ---- a counting host allocator, as a C host would provide ----------------

struct Counts {
    live: AtomicUsize,
    total: AtomicUsize,
}

static BLOCKS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn counting_ctl(
    self_: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: `self_` is the `Counts` the test passed and outlives the plugin.
    let counts = unsafe { &*self_.cast::<Counts>() };
    match command {
        AllocatorCommand::MALLOC => {
            // SAFETY: MALLOC passes alloc params and a writable out pointer.
            let size = unsafe { (*params.cast::<AllocatorAllocParams>()).byte_length };
            let layout = std::alloc::Layout::from_size_align(size, 16).unwrap();
            // SAFETY: size is non-zero (the SDK asks for at least one byte).
            let block = unsafe { std::alloc::alloc(layout) };
            BLOCKS.lock().unwrap().push((block as usize, size));
            counts.live.fetch_add(1, Ordering::SeqCst);
            counts.total.fetch_add(1, Ordering::SeqCst);
            // SAFETY: see above.
            unsafe { *inout_ptr = block.cast() };
            Status::OK
        }
        AllocatorCommand::FREE => {
            // SAFETY: FREE passes the block in `*inout_ptr`.
            let block = unsafe { *inout_ptr } as usize;
            let mut blocks = BLOCKS.lock().unwrap();
            let index = blocks.iter().position(|&(b, _)| b == block).expect("free of an unknown block");
            let (_, size) = blocks.swap_remove(index);
            // SAFETY: allocated above with this layout.
            unsafe {
                std::alloc::dealloc(block as *mut u8, std::alloc::Layout::from_size_align(size, 16).unwrap())
            };
            counts.live.fetch_sub(1, Ordering::SeqCst);
            Status::OK
        }
        _ => Status::from_code(StatusCode::UNIMPLEMENTED),
    }
}

fn table(query: xplug_sdk::abi::QueryFn) -> &'static PluginV0 {
    // SAFETY: generated query functions follow the v0 contract.
    let raw = unsafe { query(Version::LATEST, ptr::null_mut()) };
    assert!(!raw.is_null());
    // SAFETY: a non-NULL result points at the plugin's static v0 table.
    unsafe { &*raw.cast::<PluginV0>() }
}

fn header(plugin: &PluginV0) -> &Header {
    // SAFETY: the header pointer of a generated table is a static.
    unsafe { &*plugin.header }
}

fn c_str(ptr: *const c_char) -> &'static str {
    // SAFETY: header strings are static C strings.
    unsafe { CStr::from_ptr(ptr) }.to_str().unwrap()
}

struct Loaded {
    plugin: &'static PluginV0,
    state: *mut c_void,
}

fn load(
    plugin: &'static PluginV0,
    counts: &'static Counts,
    params: &[(&str, &str)],
) -> Result<Loaded, StatusCode> {
    let environment = EnvironmentV0 {
        host_allocator: Allocator { self_: ptr::from_ref(counts).cast_mut().cast(), ctl: Some(counting_ctl) },
    };
    let pairs: Vec<StringPair> = params
        .iter()
        .map(|(k, v)| StringPair {
            key: StringView::from_bytes(k.as_bytes()),
            value: StringView::from_bytes(v.as_bytes()),
        })
        .collect();
    let mut state = ptr::null_mut();
    // SAFETY: environment, pairs and the out pointer are valid for the call.
    let status = unsafe { (plugin.load.unwrap())(&environment, pairs.len(), pairs.as_ptr(), &mut state) };
    if status.is_ok() { Ok(Loaded { plugin, state }) } else { Err(status.code()) }
}

struct Resolved {
    status: StatusCode,
    resolution: Resolution,
    functions: Vec<*mut c_void>,
    contexts: Vec<*mut c_void>,
}

fn resolve(loaded: &Loaded, names: &[&CStr], prefilled: &[usize]) -> Resolved {
    let pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut functions = vec![ptr::null_mut(); names.len()];
    let marker = 0xdead_usize as *mut c_void;
    for &slot in prefilled {
        functions[slot] = marker;
    }
    let mut contexts = vec![ptr::null_mut(); names.len()];
    let params = ResolveParamsV0 {
        count: names.len(),
        symbol_names: pointers.as_ptr(),
        out_fn_ptrs: functions.as_mut_ptr(),
        out_fn_contexts: contexts.as_mut_ptr(),
    };
    let mut resolution = Resolution(0xff);
    // SAFETY: the arrays hold `count` elements and live across the call.
    let status = unsafe { (loaded.plugin.resolve.unwrap())(loaded.state, &params, &mut resolution) };
    Resolved { status: status.code(), resolution, functions, contexts }
}

fn call(function: *mut c_void, context: *mut c_void, op: &mut BinOp) -> i32 {
    // SAFETY: `function` was produced by resolve, so it is an `ImportFn`.
    let function = unsafe { import_fn_from_ptr(function) }.expect("resolved");
    // SAFETY: `op` is a valid `BinOp`, the args type of every import here.
    unsafe { function(ptr::from_mut(op).cast(), context, ptr::null_mut()) }
}

fn unload(loaded: Loaded) {
    // SAFETY: `state` came from this plugin's load and is unloaded once.
    unsafe { (loaded.plugin.unload.unwrap())(loaded.state) };
}

fn leak_counts() -> &'static Counts {
    Box::leak(Box::new(Counts { live: AtomicUsize::new(0), total: AtomicUsize::new(0) }))
}

#[test]
fn header_and_metadata() {
    let plugin = table(tester::PLUGIN.query());
    let header = self::header(plugin);
    assert_eq!(header.version, Version::LATEST);
    assert_eq!(c_str(header.name), "tester");
    assert_eq!(c_str(header.description), "entry point tests");
    assert_eq!(header.features, Features::NONE);
    assert_eq!(header.sanitizer, Sanitizer::NONE);
    assert_eq!(tester::PLUGIN.symbols(), ["add_i32", "checked_div_i32", "mul_i32"]);

    let stateless = self::header(table(stateless::PLUGIN.query()));
    assert_eq!(stateless.features, Features::STANDALONE);
    assert_eq!(stateless.sanitizer, Sanitizer::ADDRESS);
    assert_eq!(stateless::PLUGIN.symbols(), ["alpha", "zeta"]);

    // A host older than v0.1 gets NULL.
    // SAFETY: generated query functions follow the v0 contract.
    assert!(unsafe { (tester::PLUGIN.query())(Version(0), ptr::null_mut()) }.is_null());
}

#[test]
fn load_resolve_call_unload_frees_everything() {
    let counts = leak_counts();
    let loaded = load(table(tester::PLUGIN.query()), counts, &[("multiplier", "3")]).unwrap();
    assert!(!loaded.state.is_null());
    assert_eq!(counts.live.load(Ordering::SeqCst), 2, "state + the state's own HostBox");

    // Sorted by bare name with an optional, an unknown optional and a duplicate.
    let resolved = resolve(&loaded, &[c"?add_i32", c"checked_div_i32", c"mul_i32", c"mul_i32", c"?zzz"], &[]);
    assert_eq!(resolved.status, StatusCode::OK);
    assert_eq!(resolved.resolution, Resolution::MISSING_OPTIONAL);
    assert!(resolved.functions[..4].iter().all(|f| !f.is_null()));
    assert!(resolved.functions[4].is_null());
    assert_eq!(resolved.contexts[2], loaded.state, "stateful imports get the plugin state");
    assert!(resolved.contexts[0].is_null(), "stateless imports get NULL");

    let mut op = BinOp { a: 6, b: 7, out: 0 };
    assert_eq!(call(resolved.functions[2], resolved.contexts[2], &mut op), 0);
    assert_eq!(op.out, 126);
    assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut op), 0);
    assert_eq!(op.out, 13);
    let mut zero = BinOp { a: 1, b: 0, out: 0 };
    assert_eq!(
        call(resolved.functions[1], resolved.contexts[1], &mut zero),
        ImportError::INVALID_ARGUMENT.code()
    );
    // A stateful import called without its context fails instead of crashing.
    assert_eq!(call(resolved.functions[2], ptr::null_mut(), &mut op), ImportError::INVALID_ARGUMENT.code());
    // So does a NULL args pointer.
    // SAFETY: the import handles NULL args by returning an error.
    let code = unsafe {
        import_fn_from_ptr(resolved.functions[0]).expect("resolved")(
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(code, ImportError::INVALID_ARGUMENT.code());

    // Unsorted, pre-filled, and a required miss.
    let resolved = resolve(&loaded, &[c"mul_i32", c"nope", c"add_i32", c"?checked_div_i32"], &[2]);
    assert_eq!(resolved.status, StatusCode::NOT_FOUND);
    assert_eq!(resolved.resolution, Resolution::NONE);
    assert!(!resolved.functions[0].is_null());
    assert!(resolved.functions[1].is_null());
    assert_eq!(resolved.functions[2], 0xdead_usize as *mut c_void, "pre-filled slots are never overwritten");
    assert!(!resolved.functions[3].is_null());

    // Zero names: OK and nothing touched.
    let resolved = resolve(&loaded, &[], &[]);
    assert_eq!((resolved.status, resolved.resolution), (StatusCode::OK, Resolution::NONE));

    unload(loaded);
    assert_eq!(counts.live.load(Ordering::SeqCst), 0, "unload frees every host allocation");
    assert_eq!(counts.total.load(Ordering::SeqCst), 2);
}

#[test]
fn provides_can_decline_a_symbol() {
    let counts = leak_counts();
    let loaded = load(table(tester::PLUGIN.query()), counts, &[("hide", "mul_i32")]).unwrap();
    let resolved = resolve(&loaded, &[c"add_i32", c"?mul_i32"], &[]);
    assert_eq!(resolved.status, StatusCode::OK);
    assert_eq!(resolved.resolution, Resolution::MISSING_OPTIONAL);
    assert!(resolved.functions[1].is_null());
    unload(loaded);
    assert_eq!(counts.live.load(Ordering::SeqCst), 0);
}

#[test]
fn stateless_plugin_allocates_nothing() {
    let counts = leak_counts();
    let loaded = load(table(stateless::PLUGIN.query()), counts, &[]).unwrap();
    assert!(loaded.state.is_null(), "a stateless plugin's self is NULL");
    let resolved = resolve(&loaded, &[c"zeta", c"alpha"], &[]);
    assert_eq!(resolved.status, StatusCode::OK);
    let mut op = BinOp { a: 0, b: 0, out: 0 };
    assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut op), 0);
    assert_eq!(op.out, 26);
    unload(loaded);
    assert_eq!(counts.total.load(Ordering::SeqCst), 0);
}

#[test]
fn load_error_is_a_status_and_allocates_nothing_left() {
    let counts = leak_counts();
    let error = load(table(tester::PLUGIN.query()), counts, &[("multiplier", "many")]).err();
    assert_eq!(error, Some(StatusCode::INVALID_ARGUMENT));
    assert_eq!(counts.live.load(Ordering::SeqCst), 0);
}

#[test]
fn panic_in_load_is_internal() {
    let counts = leak_counts();
    let error = load(table(tester::PLUGIN.query()), counts, &[("panic", "load")]).err();
    assert_eq!(error, Some(StatusCode::INTERNAL));
    assert_eq!(counts.live.load(Ordering::SeqCst), 0);
}

#[test]
fn panic_in_resolve_is_internal() {
    let counts = leak_counts();
    let loaded = load(table(tester::PLUGIN.query()), counts, &[("panic", "resolve")]).unwrap();
    let resolved = resolve(&loaded, &[c"mul_i32"], &[]);
    assert_eq!(resolved.status, StatusCode::INTERNAL);
    // The plugin still works and unloads cleanly afterwards.
    unload(loaded);
    assert_eq!(counts.live.load(Ordering::SeqCst), 0);
}

#[test]
fn panic_in_import_is_a_nonzero_code() {
    let counts = leak_counts();
    let loaded = load(table(tester::PLUGIN.query()), counts, &[]).unwrap();
    let resolved = resolve(&loaded, &[c"add_i32"], &[]);
    let mut op = BinOp { a: -1, b: 2, out: 0 };
    assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut op), ImportError::INTERNAL.code());
    let mut fine = BinOp { a: 1, b: 2, out: 0 };
    assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut fine), 0);
    assert_eq!(fine.out, 3);
    unload(loaded);
}

#[test]
fn hash_index_and_walk_find_every_export() {
    let plugin = table(many::PLUGIN.query());
    let counts = leak_counts();
    let loaded = load(plugin, counts, &[]).unwrap();
    let mut op = BinOp { a: 0, b: 0, out: -1 };
    // One name at a time: sparse, so the hash index answers.
    for (position, name) in MANY.iter().enumerate() {
        let resolved = resolve(&loaded, &[name], &[]);
        assert_eq!(resolved.status, StatusCode::OK, "{name:?}");
        assert_eq!(resolved.resolution, Resolution::NONE);
        assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut op), 0);
        assert_eq!(op.out, i32::try_from(position).unwrap(), "{name:?} resolved to the wrong import");
        // The optional spelling finds the same import.
        let optional = std::ffi::CString::new(format!("?{}", name.to_str().unwrap())).unwrap();
        let resolved = resolve(&loaded, &[&optional], &[]);
        assert_eq!((resolved.status, resolved.resolution), (StatusCode::OK, Resolution::NONE));
        assert_eq!(call(resolved.functions[0], resolved.contexts[0], &mut op), 0);
        assert_eq!(op.out, i32::try_from(position).unwrap());
    }
    // Near misses through the hash index: prefixes, extensions, case.
    for missing in [c"abcd", c"abcdefghij", c"simple_mul", c"Z", c"", c"zz_last_"] {
        let resolved = resolve(&loaded, &[missing], &[]);
        assert_eq!(resolved.status, StatusCode::NOT_FOUND, "{missing:?}");
        assert!(resolved.functions[0].is_null());
    }
    let resolved = resolve(&loaded, &[c"?abcd", c"b"], &[]);
    assert_eq!((resolved.status, resolved.resolution), (StatusCode::OK, Resolution::MISSING_OPTIONAL));
    // Every name at once, in declaration (unsorted) order: dense, so the
    // sorted walk answers.
    let resolved = resolve(&loaded, &MANY, &[]);
    assert_eq!((resolved.status, resolved.resolution), (StatusCode::OK, Resolution::NONE));
    for (position, (&function, &context)) in resolved.functions.iter().zip(&resolved.contexts).enumerate() {
        assert_eq!(call(function, context, &mut op), 0);
        assert_eq!(op.out, i32::try_from(position).unwrap());
    }
    unload(loaded);
}
