//! The `kernel` template: one stateless workgroup kernel that serves every
//! deployment (`docs/src/plugins/dispatch.md#linked-kernels`): an import resolved at
//! run time from the shared library or the `.sos`, and the same code
//! linked into the executable at compile time as an object or LLVM
//! bitcode. Its program `mul.mlir` calls the kernel as an import;
//! `xplug build --object --bitcode --program mul.mlir` writes the programs
//! that link it instead.

use super::{Source, args_header_test, standalone_cargo_toml};

/// The program every deployment runs, and the function it exports.
pub(crate) const PROGRAM: &str = "mul.mlir";

/// The files of a `kernel` crate: (path relative to its directory,
/// contents).
pub(crate) fn scaffold(name: &str, ident: &str, source: &Source) -> Vec<(&'static str, String)> {
    let library = format!("{}{ident}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    // Named after the crate, whose one kernel it is, not after what the
    // template computes: the name stays right when the author replaces the
    // product with their own computation.
    let import = format!("{ident}_workgroup");
    let fill = |template: &str| {
        template
            .replace("@NAME@", name)
            .replace("@IDENT@", ident)
            .replace("@IMPORT@", &import)
            .replace("@LIBRARY@", &library)
    };
    let cargo_toml = standalone_cargo_toml(
        name,
        &library,
        &format!(
            "`xplug build --sos` builds the same library as\n# a standalone embedded ELF \
             (target/sos/{ident}.sos), `xplug build --object\n# --bitcode` as kernels linked into \
             IREE's executables (target/linked)."
        ),
        source,
    );
    vec![
        ("Cargo.toml", cargo_toml),
        ("src/lib.rs", fill(LIB_RS)),
        ("tests/kernel.rs", fill(TEST_RS)),
        ("tests/c_header.rs", args_header_test(ident)),
        ("mul.mlir", fill(MUL_MLIR)),
        ("README.md", fill(README_MD)),
        (".gitignore", "/target\n*.vmfb\n".to_owned()),
    ]
}

const LIB_RS: &str = r#"//! `@NAME@`: an element-wise product kernel for IREE executables, one
//! source for every deployment.
//!
//! `@IMPORT@` follows IREE's workgroup convention: each call gets its
//! slice of the tensors as base pointer + element offset per operand, the
//! slice length `size` and the workgroup id `tid` (informational, never an
//! element index), and computes `out[i] = lhs[i] * rhs[i]` for `i < size`.
//!
//! The kernel keeps no state, so it builds four ways from this one source:
//! - `cargo build --release`: the shared library target/release/@LIBRARY@,
//!   an import plugin;
//! - `xplug build --sos`: the standalone embedded ELF target/sos/@IDENT@.sos,
//!   the same plugin for any host of the architecture;
//! - `xplug build --object --bitcode`: an object and LLVM bitcode per
//!   architecture in target/linked, which IREE's compiler links into the
//!   executable: no plugin at run time.
#![no_std]

use xplug_sdk::{Buffer, BufferMut, ImportArgs, ImportError};

/// The args struct IREE passes to `@IMPORT@` (C layout, 64-bit;
/// `include/@IDENT@_args.h` is generated from it). Linked into an
/// executable, the kernel takes the same fields as separate C arguments,
/// without those IREE appends for `hal.import.fields`.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct MulArgs {
    /// The left operand's base pointer.
    pub lhs: Buffer<f32>,
    /// Element offset of this call's slice in `lhs`.
    pub lhs_offset: usize,
    /// The right operand's base pointer.
    pub rhs: Buffer<f32>,
    /// Element offset of this call's slice in `rhs`.
    pub rhs_offset: usize,
    /// The output tensor's base pointer.
    pub out: BufferMut<f32>,
    /// Element offset of this call's slice in `out`.
    pub out_offset: usize,
    /// Elements in this call's slice.
    pub size: usize,
    /// The calling workgroup's id (informational).
    pub tid: usize,
    /// The processor running the workgroup (`hal.import.fields`; zero in a
    /// linked call).
    #[import_field]
    pub processor_id: u32,
    /// That processor's feature bits (`hal.import.fields`; NULL in a
    /// linked call).
    #[import_field]
    pub processor_data: Buffer<u64>,
}

/// `out[out_offset + i] = lhs[lhs_offset + i] * rhs[rhs_offset + i]` for
/// `i < size`. Written without indexing or formatting, so that no panic
/// path remains and IREE's linker can take the kernel.
fn mul(args: &mut MulArgs) -> Result<(), ImportError> {
    let size = args.size;
    if size == 0 {
        return Ok(());
    }
    // IREE passes non-NULL, aligned bindings; damaged code may not, and a
    // slice of such a pointer would be undefined.
    if args.lhs.is_null() || args.rhs.is_null() || args.out.is_null() {
        return Err(ImportError::INVALID_ARGUMENT);
    }
    if !(args.lhs.is_aligned() && args.rhs.is_aligned() && args.out.is_aligned()) {
        return Err(ImportError::INVALID_ARGUMENT);
    }
    let (Some(lhs_end), Some(rhs_end), Some(out_end)) = (
        args.lhs_offset.checked_add(size),
        args.rhs_offset.checked_add(size),
        args.out_offset.checked_add(size),
    ) else {
        return Err(ImportError::INVALID_ARGUMENT);
    };
    // SAFETY: IREE's dispatch convention: each binding is valid for
    // `offset + size` elements, the inputs are only read during the
    // dispatch and `[out_offset, out_offset + size)` is this call's alone.
    let (lhs, rhs, out) =
        unsafe { (args.lhs.as_slice(lhs_end), args.rhs.as_slice(rhs_end), args.out.as_mut_slice(out_end)) };
    let (Some(lhs), Some(rhs), Some(out)) =
        (lhs.get(args.lhs_offset..), rhs.get(args.rhs_offset..), out.get_mut(args.out_offset..))
    else {
        return Err(ImportError::INVALID_ARGUMENT);
    };
    for ((out, lhs), rhs) in out.iter_mut().zip(lhs).zip(rhs) {
        *out = lhs * rhs;
    }
    Ok(())
}

#[xplug_sdk::plugin(name = "@IDENT@", description = "element-wise product workgroup kernel", features(standalone))]
pub mod plugin {
    use super::*;

    /// `out = lhs * rhs` over this call's slice.
    #[import("@IMPORT@")]
    fn mul_slice(args: &mut MulArgs) -> Result<(), ImportError> {
        mul(args)
    }
}
"#;

const TEST_RS: &str = r#"//! Loads the plugin the way a host does and calls its kernel over host
//! slices, as IREE would for one workgroup.

use xplug_manager::Manager;
use xplug_manager::providers::{LoadParamList, STATIC};
use xplug_sdk::{Buffer, BufferMut};
use @IDENT@::MulArgs;

/// Runs the kernel on `[offset, offset + size)` of `lhs` and `rhs`, like
/// one workgroup, and returns its status and the whole output tensor.
fn run(lhs: &[f32], rhs: &[f32], offset: usize, size: usize) -> (i32, Vec<f32>) {
    let query = @IDENT@::plugin::PLUGIN.query();
    // SAFETY: the query function is this crate's plugin, generated by
    // xplug-sdk, so it obeys the v0 ABI.
    let code = unsafe { STATIC.query_code("@IDENT@", query) };
    let plugin = code.load(&LoadParamList::new()).expect("the plugin loads");
    let manager = Manager::new();
    manager.register_plugin(plugin).expect("the manager takes it");
    let imports = manager.resolve_imports(["@IMPORT@"]).expect("the import resolves");
    // SAFETY: `@IMPORT@` takes a `MulArgs`.
    let kernel = unsafe { imports.typed::<MulArgs>("@IMPORT@") }.expect("resolved");
    let mut out = vec![0.0_f32; lhs.len()];
    let mut call = MulArgs {
        // Valid for the call: the slices outlive it, and `offset + size`
        // elements are in each.
        lhs: Buffer::from_slice(lhs),
        lhs_offset: offset,
        rhs: Buffer::from_slice(rhs),
        rhs_offset: offset,
        out: BufferMut::from_mut_slice(&mut out),
        out_offset: offset,
        size,
        tid: 1,
        processor_id: 0,
        processor_data: Buffer::from_slice(&[]),
    };
    let code = kernel.call(&mut call);
    (code, out)
}

#[test]
fn the_kernel_writes_its_slice_only() {
    let lhs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let rhs = [2.0, -2.0, 0.5, 4.0, 1.0, 7.0];
    let (code, out) = run(&lhs, &rhs, 1, 4);
    assert_eq!(code, 0);
    assert_eq!(out, [0.0, -4.0, 1.5, 16.0, 5.0, 0.0]);
}

#[test]
fn an_empty_slice_writes_nothing() {
    assert_eq!(run(&[1.0], &[2.0], 1, 0), (0, vec![0.0]));
}
"#;

const MUL_MLIR: &str = r#"// `@NAME@`'s kernel in an IREE program: `@mul(lhs, rhs)` returns
// `lhs * rhs`, computed by `@IMPORT@`, one call per 64-element workgroup,
// each call given its own slice (the last one shorter when the length is
// not a multiple of 64). IREE passes each operand as base pointer + element
// offset, then the slice length and the workgroup id: `MulArgs`'s fields.
//
// As written, the kernel is an import: the plugin (target/release/@LIBRARY@
// or target/sos/@IDENT@.sos) provides it at run time, and IREE appends the
// fields of `hal.import.fields`. `xplug build --object --bitcode --program
// mul.mlir` writes target/linked/mul.object.mlir and mul.bitcode.mlir: this
// program with the declaration made a static import and the executable
// given the objects, so the same code is linked into the executable.
module @@IDENT@_mul {
  stream.executable private @kernels {
    stream.executable.export public @mul_slices workgroups(%n: index) -> (index, index, index) {
      %groups = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%n]
      %one = arith.constant 1 : index
      stream.return %groups, %one, %one : index, index, index
    }
    builtin.module {
      func.func private @@IMPORT@(
          %lhs: memref<f32>, %lhs_offset: index,
          %rhs: memref<f32>, %rhs_offset: index,
          %out: memref<f32>, %out_offset: index,
          %size: index, %tid: index) attributes {
        hal.import.fields = ["processor_id", "processor_data"],
        llvm.bareptr = true
      }
      func.func @mul_slices(%lhs_binding: !stream.binding, %rhs_binding: !stream.binding,
                            %out_binding: !stream.binding, %n: index) {
        %zero = arith.constant 0 : index
        %group = stream.dispatch.workgroup.id[0] : index
        %first = affine.apply affine_map<()[s0] -> (s0 * 64)>()[%group]
        %size = affine.min affine_map<()[s0, s1] -> (64, s1 - s0)>()[%first, %n]
        %lhs = stream.binding.subspan %lhs_binding[%zero] : !stream.binding -> memref<?xf32>{%n}
        %rhs = stream.binding.subspan %rhs_binding[%zero] : !stream.binding -> memref<?xf32>{%n}
        %out = stream.binding.subspan %out_binding[%zero] : !stream.binding -> memref<?xf32>{%n}
        %lhs_base, %lhs_offset, %lhs_len, %lhs_stride = memref.extract_strided_metadata %lhs
            : memref<?xf32> -> memref<f32>, index, index, index
        %rhs_base, %rhs_offset, %rhs_len, %rhs_stride = memref.extract_strided_metadata %rhs
            : memref<?xf32> -> memref<f32>, index, index, index
        %out_base, %out_offset, %out_len, %out_stride = memref.extract_strided_metadata %out
            : memref<?xf32> -> memref<f32>, index, index, index
        %lhs_start = arith.addi %lhs_offset, %first : index
        %rhs_start = arith.addi %rhs_offset, %first : index
        %out_start = arith.addi %out_offset, %first : index
        func.call @@IMPORT@(%lhs_base, %lhs_start, %rhs_base, %rhs_start,
                                  %out_base, %out_start, %size, %group)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, index, index) -> ()
        return
      }
    }
  }

  func.func @mul(%lhs_view: !hal.buffer_view, %rhs_view: !hal.buffer_view) -> !hal.buffer_view {
    %n = hal.buffer_view.dim<%lhs_view : !hal.buffer_view>[0] : index
    %lhs = hal.tensor.import %lhs_view "lhs" : !hal.buffer_view -> tensor<?xf32>{%n}
    %rhs = hal.tensor.import %rhs_view "rhs" : !hal.buffer_view -> tensor<?xf32>{%n}
    %product = flow.dispatch @kernels::@mul_slices[%n](%lhs, %rhs, %n)
        : (tensor<?xf32>{%n}, tensor<?xf32>{%n}, index) -> tensor<?xf32>{%n}
    %exported = hal.tensor.export %product "product" : tensor<?xf32>{%n} -> !hal.buffer_view
    return %exported : !hal.buffer_view
  }
}
"#;

const README_MD: &str = r#"# @NAME@

An element-wise product kernel for IREE executables, written once with
xplug-sdk and deployed four ways: `@IMPORT@` computes
`out[i] = lhs[i] * rhs[i]` over its workgroup's slice.

## Build

```sh
cargo build --release    # target/release/@LIBRARY@: an import plugin
cargo test               # the kernel over host slices; include/@IDENT@_args.h
xplug build --sos        # target/sos/@IDENT@.sos: the plugin for any host
xplug build --object --bitcode --program mul.mlir
                         # target/linked: an object and bitcode per architecture,
                         # mul.object.mlir and mul.bitcode.mlir
```

## Develop against the import

`mul.mlir` calls the kernel as an import, from a plugin loaded at run
time. With IREE's pip packages (`pip install iree-base-compiler
iree-base-runtime`):

```sh
iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
  --iree-llvmcpu-target-cpu=generic mul.mlir -o mul.vmfb
iree-run-module --device=local-sync --executable_plugin=target/release/@LIBRARY@ \
  --module=mul.vmfb --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2
xplug run mul.vmfb --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 \
  --plugin=target/sos/@IDENT@.sos
```

While you work on the kernel, `xplug run` gives you what a plugin gets
from xplug's manager: per-import profiles (`--profile`), crash reports that
name the kernel, and `xplug call target/release/@LIBRARY@ @IMPORT@ ...`
for one call with your own values.

## Ship it linked

The programs `xplug build --program mul.mlir` wrote are `mul.mlir` with
the declaration made a static import and the executable given the
objects: IREE's compiler links the kernel into the executable, and no
plugin is needed at run time.

```sh
iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
  --iree-llvmcpu-target-cpu=generic --iree-hal-executable-object-search-path=target/linked \
  target/linked/mul.bitcode.mlir -o mul_linked.vmfb
iree-run-module --device=local-sync --module=mul_linked.vmfb --function=mul \
  --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2
```

`mul.object.mlir` links the object instead; the bitcode is optimised
together with IREE's generated code. Every deployment gives the same
bytes. `xplug build` refuses, naming the symbol, a kernel that IREE's
linker cannot take: one that can panic, formats, or keeps globals or
thread-locals. A kernel that needs plugin state (`state = ...`) is an
import only.
"#;
