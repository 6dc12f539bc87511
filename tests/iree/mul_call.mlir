// xplug end-to-end program: an executable that `func.call`s an imported
// kernel, one call per 64-element workgroup, each call given its own slice.
//
// `@mul(a, b)` returns `a * b` computed by whichever plugin provides
// `simple_mul_workgroup`. Workgroup `w` passes the bindings' base pointers
// with offsets advanced by `w * 64`, `size = min(64, n - w * 64)` (the last
// slice is shorter when `n` is not a multiple of 64) and `tid = w`; the
// import also receives the processor id and data IREE appends when asked
// for them with `hal.import.fields`.
//
// Both inputs are imported with `a`'s length, so IREE checks `b`'s shape
// against it before anything runs and refuses a shorter or longer `b`
// (docs/src/plugins/dispatch.md, "Tie the inputs' shapes").
module @xplug_mul_call {
  stream.executable private @kernels {
    stream.executable.export public @mul_slices workgroups(%n: index) -> (index, index, index) {
      %groups = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%n]
      %one = arith.constant 1 : index
      stream.return %groups, %one, %one : index, index, index
    }
    builtin.module {
      func.func private @simple_mul_workgroup(
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
        func.call @simple_mul_workgroup(%lhs_base, %lhs_start, %rhs_base, %rhs_start,
                                        %out_base, %out_start, %size, %group)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, index, index) -> ()
        return
      }
    }
  }

  func.func @mul(%a_view: !hal.buffer_view, %b_view: !hal.buffer_view) -> !hal.buffer_view {
    %n = hal.buffer_view.dim<%a_view : !hal.buffer_view>[0] : index
    %a = hal.tensor.import %a_view "a" : !hal.buffer_view -> tensor<?xf32>{%n}
    %b = hal.tensor.import %b_view "b" : !hal.buffer_view -> tensor<?xf32>{%n}
    %product = flow.dispatch @kernels::@mul_slices[%n](%a, %b, %n)
        : (tensor<?xf32>{%n}, tensor<?xf32>{%n}, index) -> tensor<?xf32>{%n}
    %exported = hal.tensor.export %product "product" : tensor<?xf32>{%n} -> !hal.buffer_view
    return %exported : !hal.buffer_view
  }
}

// Run as IREE runs its own samples: each RUN line pipes the compiler into the
// runtime and the output into filecheck. crates/cli/tests/piped.rs runs
// every RUN line twice, with `iree-run-module` and with `xplug run` in its
// place, and both must pass the same CHECK lines with the same bytes.
// `%s` is this file, `%plugin{NAME}` a plugin built for the tests: the C
// plugin `xplug_e2e_print` prints each product with printf, the Rust
// plugin `print_plugin` with println!, and both tools put the lines
// between `EXEC` (flushed before the call) and the result. The lines sit at
// the end so that the program's source locations, and with them the bytes
// of the compiled module that the flip sweep names by offset, stay put.
//
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
//
// CHECK: EXEC @mul
// CHECK-NEXT: workgroup 0: 1 * 2 = 2
// CHECK-NEXT: workgroup 0: 2 * 2 = 4
// CHECK-NEXT: workgroup 0: 3 * 2 = 6
// CHECK-NEXT: workgroup 0: 4 * 2 = 8
// CHECK-NEXT: result[0]: hal.buffer_view
// CHECK-NEXT: 4xf32=2 4 6 8
