// xplug end-to-end program: weights from a parameter archive, a hot loop
// in a plugin. `@mul_weights(a)` returns `a * weights`, where `weights`
// (1000 f32) is the parameter `weights` of scope `model` (an `.irpa` given
// with `--parameters=model=FILE`) and the product is computed by whichever
// plugin provides `simple_mul_workgroup`, one call per 64-element
// workgroup, as in `mul_call.mlir`.
module @xplug_mul_weights {
  util.global private @weights = #stream.parameter.named<"model"::"weights"> : tensor<1000xf32>

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

  func.func @mul_weights(%a: tensor<1000xf32>) -> tensor<1000xf32> {
    %n = arith.constant 1000 : index
    %weights = util.global.load @weights : tensor<1000xf32>
    %lhs = tensor.cast %a : tensor<1000xf32> to tensor<?xf32>
    %rhs = tensor.cast %weights : tensor<1000xf32> to tensor<?xf32>
    %product = flow.dispatch @kernels::@mul_slices[%n](%lhs, %rhs, %n)
        : (tensor<?xf32>{%n}, tensor<?xf32>{%n}, index) -> tensor<?xf32>{%n}
    %result = tensor.cast %product : tensor<?xf32> to tensor<1000xf32>
    return %result : tensor<1000xf32>
  }
}

// Run as IREE runs its own samples: each RUN line pipes the compiler into the
// runtime and the output into filecheck. crates/cli/tests/piped.rs runs
// every RUN line twice, with `iree-run-module` and with `xplug run` in its
// place, and both must pass the same CHECK lines with the same bytes.
// `%s` is this file, `%plugin{NAME}` a plugin built for the tests (the C
// plugin `xplug_e2e_print` prints each product with printf, the Rust
// plugin `print_plugin` with println!), `%weights-irpa` an archive whose
// `weights` are 1000 twos. local-task runs one worker, so the 16
// workgroups print in order (the last, workgroup 15, has 40 elements). The lines sit at the end so that the
// program's source locations stay put.
//
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul_weights --parameters=model=%weights-irpa --input=1000xf32=3 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul_weights --parameters=model=%weights-irpa --input=1000xf32=3 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --task_topology_group_count=1 --module=- --function=mul_weights --parameters=model=%weights-irpa --input=1000xf32=3 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --task_topology_group_count=1 --module=- --function=mul_weights --parameters=model=%weights-irpa --input=1000xf32=3 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
//
// CHECK: EXEC @mul_weights
// CHECK-NEXT: workgroup 0: 3 * 2 = 6
// CHECK-COUNT-64: workgroup 14: 3 * 2 = 6
// CHECK-COUNT-40: workgroup 15: 3 * 2 = 6
// CHECK-NEXT: result[0]: hal.buffer_view
// CHECK-NEXT: 1000xf32=6 6 6 6 6 6 6 6
