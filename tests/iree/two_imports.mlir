// xplug end-to-end program: one executable importing two kernels that the
// end-to-end run takes from two different plugins.
//
// `@mul_then_sub(a, b)` returns `a * b - b`: each workgroup calls
// `simple_mul_workgroup` (from an example plugin) to write `a * b` into its
// slice of the result, then `e2e_sub_workgroup` (from the test plugin
// `tests/iree/e2e_plugin.c`) to subtract `b` from that slice in place, both
// with the args layout of IREE's custom-dispatch sample.
module @xplug_two_imports {
  stream.executable private @kernels {
    stream.executable.export public @mul_then_sub_slices workgroups(%n: index) -> (index, index, index) {
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
      func.func private @e2e_sub_workgroup(
          %lhs: memref<f32>, %lhs_offset: index,
          %rhs: memref<f32>, %rhs_offset: index,
          %out: memref<f32>, %out_offset: index,
          %size: index, %tid: index) attributes {
        hal.import.fields = ["processor_id", "processor_data"],
        llvm.bareptr = true
      }
      func.func @mul_then_sub_slices(%lhs_binding: !stream.binding, %rhs_binding: !stream.binding,
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
        func.call @e2e_sub_workgroup(%out_base, %out_start, %rhs_base, %rhs_start,
                                     %out_base, %out_start, %size, %group)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, index, index) -> ()
        return
      }
    }
  }

  // Both inputs are imported with `a`'s length, so IREE checks `b`'s shape
  // against it before anything runs (docs/src/plugins/dispatch.md, "Tie the inputs'
  // shapes").
  func.func @mul_then_sub(%a_view: !hal.buffer_view, %b_view: !hal.buffer_view) -> !hal.buffer_view {
    %n = hal.buffer_view.dim<%a_view : !hal.buffer_view>[0] : index
    %a = hal.tensor.import %a_view "a" : !hal.buffer_view -> tensor<?xf32>{%n}
    %b = hal.tensor.import %b_view "b" : !hal.buffer_view -> tensor<?xf32>{%n}
    %result = flow.dispatch @kernels::@mul_then_sub_slices[%n](%a, %b, %n)
        : (tensor<?xf32>{%n}, tensor<?xf32>{%n}, index) -> tensor<?xf32>{%n}
    %exported = hal.tensor.export %result "result" : tensor<?xf32>{%n} -> !hal.buffer_view
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
// RUN:   iree-run-module --device=local-sync --module=- --function=mul_then_sub --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_sub} --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul_then_sub --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_sub} --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul_then_sub --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_sub} --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul_then_sub --input=4xf32=1,2,3,4 --input=4xf32=2,2,2,2 --executable_plugin=%plugin{xplug_e2e_sub} --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
//
// CHECK: EXEC @mul_then_sub
// CHECK-NEXT: workgroup 0: 1 * 2 = 2
// CHECK-NEXT: workgroup 0: 2 * 2 = 4
// CHECK-NEXT: workgroup 0: 3 * 2 = 6
// CHECK-NEXT: workgroup 0: 4 * 2 = 8
// CHECK-NEXT: result[0]: hal.buffer_view
// CHECK-NEXT: 4xf32=0 2 4 6
