//! `#[derive(ImportArgs)]` accepts every field kind that is valid for any
//! bit pattern, and an import reading such a struct filled with arbitrary
//! bytes (as an executable may) sees exactly those bytes and never crashes.
//! The refused kinds are the compile-fail cases in `tests/ui/field_*.rs`.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{offset_of, size_of};
use std::ptr::{self, NonNull};

use proptest::prelude::*;
use xplug_sdk::abi::{
    Allocator, EnvironmentV0, PluginV0, ResolveParamsV0, StatusCode, Version, import_fn_from_ptr,
};
use xplug_sdk::{Buffer, BufferMut, ImportArgs};

/// A nested args struct (tuple form).
#[derive(Clone, Copy, Debug, ImportArgs)]
#[repr(C)]
pub struct Range(pub u16, pub u16);

/// A callback the executable may pass (or NULL).
pub type Callback = Option<unsafe extern "C" fn(*mut c_void, usize) -> i32>;

/// One field of every accepted kind, with padding after `flag` and after
/// `scale` on 64-bit targets (as in IREE's own sample `params_t`).
#[derive(ImportArgs)]
#[repr(C)]
pub struct Everything {
    /// A C `bool`.
    pub flag: u8,
    /// A C enum.
    pub mode: u32,
    /// A float.
    pub scale: f32,
    /// A nullable pointer.
    pub data: Option<NonNull<f32>>,
    /// A nullable C callback.
    pub callback: Callback,
    /// An input buffer.
    pub input: Buffer<u8>,
    /// An output buffer.
    pub output: BufferMut<u8>,
    /// A pointer to the same struct type (`Self` in a field type).
    pub next: *const Self,
    /// An array of numbers.
    pub letters: [u32; 3],
    /// An array of nested args structs.
    pub ranges: [Range; 2],
    /// Zero-sized.
    pub marker: PhantomData<*const u8>,
    /// Output: what the import saw, folded into one number.
    pub summary: u64,
}

/// What an import can observe of `Everything`, folded the same way by the
/// import and by the test (from the raw bytes).
fn fold(parts: &[u64]) -> u64 {
    parts.iter().fold(0xcbf2_9ce4_8422_2325, |hash, part| (hash ^ part).wrapping_mul(0x100_0000_01b3))
}

#[xplug_sdk::plugin(name = "params_kinds")]
mod plugin {
    use super::*;

    #[import]
    fn observe(args: &mut Everything) {
        args.summary = fold(&[
            u64::from(args.flag != 0),
            u64::from(args.mode),
            u64::from(args.scale.to_bits()),
            u64::from(args.data.is_some()),
            u64::from(args.callback.is_some()),
            u64::from(args.input.is_null()),
            u64::from(args.output.is_null()),
            u64::from(args.next.is_null()),
            u64::from(args.letters[0]),
            u64::from(args.letters[2]),
            u64::from(args.ranges[0].0),
            u64::from(args.ranges[1].1),
        ]);
    }
}

/// The `observe` entry point, obtained through query, load and resolve as a
/// C host does.
fn observe_entry() -> unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> i32 {
    // SAFETY: a generated query function follows the v0 contract.
    let table = unsafe { (plugin::PLUGIN.query())(Version::LATEST, ptr::null_mut()) }.cast::<PluginV0>();
    // SAFETY: non-NULL results point at the plugin's static table.
    let table = unsafe { table.as_ref() }.expect("v0 table");
    let environment = EnvironmentV0 { host_allocator: Allocator { self_: ptr::null_mut(), ctl: None } };
    let mut state = ptr::null_mut();
    // SAFETY: a stateless plugin: the environment and out pointer are valid
    // for the call and nothing is allocated.
    let status = unsafe { (table.load.expect("load"))(&environment, 0, ptr::null(), &mut state) };
    assert!(status.is_ok());
    let names = [c"observe".as_ptr()];
    let mut functions = [ptr::null_mut(); 1];
    let mut contexts = [ptr::null_mut(); 1];
    let request = ResolveParamsV0 {
        count: 1,
        symbol_names: names.as_ptr(),
        out_fn_ptrs: functions.as_mut_ptr(),
        out_fn_contexts: contexts.as_mut_ptr(),
    };
    // SAFETY: the request's arrays hold one element each for the call.
    let status = unsafe { (table.resolve.expect("resolve"))(state, &request, ptr::null_mut()) };
    assert_eq!(status.code(), StatusCode::OK);
    // SAFETY: `resolve` fills its slots with `ImportFn`s.
    unsafe { import_fn_from_ptr(functions[0]) }.expect("observe resolved")
}

/// Reads `N` bytes at `offset` of `block`.
fn bytes<const N: usize>(block: &[u8], offset: usize) -> [u8; N] {
    block[offset..offset + N].try_into().expect("in bounds")
}

/// Whether the pointer-sized field at `offset` of `block` is NULL.
fn is_null_at(block: &[u8], offset: usize) -> bool {
    usize::from_ne_bytes(bytes(block, offset)) == 0
}

#[test]
fn the_struct_has_padding_and_is_still_accepted() {
    let fields = size_of::<u8>()
        + size_of::<u32>()
        + size_of::<f32>()
        + 5 * size_of::<usize>()
        + size_of::<[u32; 3]>()
        + size_of::<[Range; 2]>()
        + size_of::<u64>();
    assert!(size_of::<Everything>() > fields, "the test struct must exercise padding");
    assert_eq!(offset_of!(Everything, mode), 4, "C layout: `mode` aligned after the one-byte `flag`");
}

proptest! {
    #[test]
    fn arbitrary_bytes_are_read_as_written(block in proptest::collection::vec(any::<u8>(), size_of::<Everything>())) {
        // The executable's memory: a suitably aligned block of any bytes.
        let mut storage = vec![0u64; size_of::<Everything>().div_ceil(8)];
        // SAFETY: `storage` holds at least `block.len()` bytes and is u64-aligned.
        let raw = unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u8>(), block.len()) };
        raw.copy_from_slice(&block);

        let observe = observe_entry();
        // SAFETY: `storage` is an aligned, exclusively borrowed block of
        // `size_of::<Everything>()` initialised bytes, which is a valid
        // `Everything` because every field is `AnyBitPattern`.
        let code = unsafe { observe(storage.as_mut_ptr().cast(), ptr::null_mut(), ptr::null_mut()) };
        prop_assert_eq!(code, 0);

        let expected = fold(&[
            u64::from(block[offset_of!(Everything, flag)] != 0),
            u64::from(u32::from_ne_bytes(bytes(&block, offset_of!(Everything, mode)))),
            u64::from(u32::from_ne_bytes(bytes(&block, offset_of!(Everything, scale)))),
            u64::from(!is_null_at(&block, offset_of!(Everything, data))),
            u64::from(!is_null_at(&block, offset_of!(Everything, callback))),
            u64::from(is_null_at(&block, offset_of!(Everything, input))),
            u64::from(is_null_at(&block, offset_of!(Everything, output))),
            u64::from(is_null_at(&block, offset_of!(Everything, next))),
            u64::from(u32::from_ne_bytes(bytes(&block, offset_of!(Everything, letters)))),
            u64::from(u32::from_ne_bytes(bytes(&block, offset_of!(Everything, letters) + 8))),
            u64::from(u16::from_ne_bytes(bytes(&block, offset_of!(Everything, ranges)))),
            u64::from(u16::from_ne_bytes(bytes(&block, offset_of!(Everything, ranges) + 6))),
        ]);
        // SAFETY: the import wrote `summary`, a `u64` inside the block.
        let summary = unsafe { storage.as_ptr().cast::<u8>().add(offset_of!(Everything, summary)).cast::<u64>().read() };
        prop_assert_eq!(summary, expected);
    }
}

/// The generated C header declares every accepted field kind, and a C
/// compiler lays the structs out exactly as Rust does.
#[test]
fn the_c_header_declares_every_kind_with_the_rust_layout() {
    let header = plugin::PLUGIN.c_header();
    // A type alias (`Callback`) is invisible to the derive: its bytes.
    let alias =
        format!("  uint8_t callback[{}]; /* no C spelling for `Callback` */\n", size_of::<Callback>());
    for line in [
        "typedef struct Range {\n  uint16_t _0;\n  uint16_t _1;\n} Range;",
        "  uint8_t flag;\n  uint32_t mode;\n  float scale;\n  float* data;\n",
        &alias,
        "  const uint8_t* input;\n  uint8_t* output;\n",
        "  const struct Everything* next;\n  uint32_t letters[3];\n  struct Range ranges[2];\n  uint64_t summary;\n",
        "/* import `observe` takes a `Everything*` */",
    ] {
        assert!(header.contains(line), "missing {line:?} in:\n{header}");
    }
    // `Range` (nested) is declared before `Everything`, and only once.
    assert!(header.find("} Range;").unwrap() < header.find("} Everything;").unwrap());
    assert_eq!(header.matches("} Range;").count(), 1);

    let checks = plugin::PLUGIN.c_layout_asserts();
    assert!(checks.contains(&format!("sizeof(Everything)) == {}", size_of::<Everything>())), "{checks}");
    assert!(
        checks.contains(&format!("offsetof(Everything, summary)) == {}", offset_of!(Everything, summary)))
    );
    let dir = std::env::temp_dir().join(format!("xplug_params_header_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("params_kinds.c");
    std::fs::write(&source, format!("{header}\n{checks}")).unwrap();
    let output = xplug_fixtures::object_command(
        &xplug_fixtures::c_compiler(),
        "-std=c99",
        &source,
        &dir.join("params_kinds.o"),
    )
    .output()
    .expect("the C compiler runs (set CC)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(output.status.success(), "{}\n{header}\n{checks}", String::from_utf8_lossy(&output.stderr));
}
