// xplug end-to-end program: `iree_codegen.ukernel.generic` calling the
// imported `simple_mul_workgroup` from 5 workgroups.
//
// The `n` elements are cut into 5 slices of `ceil(n / 5)` elements, the
// last ones shorter or empty (n = 1 gives slices of 1, 0, 0, 0, 0 elements;
// n = 63 gives 13, 13, 13, 13, 11). Each workgroup hands the kernel its
// slice: IREE passes each operand as base pointer + element offset, then
// the slice length and the workgroup id, then the fields of
// `hal.import.fields`.
//
// Both inputs are imported with `a`'s length, so IREE checks `b`'s shape
// against it before anything runs and refuses a shorter or longer `b`
// (docs/src/plugins/dispatch.md, "Tie the inputs' shapes").
func.func @mul(%a_view: !hal.buffer_view, %b_view: !hal.buffer_view) -> !hal.buffer_view {
  %one = arith.constant 1 : index
  %groups = arith.constant 5 : index
  %n = hal.buffer_view.dim<%a_view : !hal.buffer_view>[0] : index
  %a = hal.tensor.import %a_view "a" : !hal.buffer_view -> tensor<?xf32>{%n}
  %b = hal.tensor.import %b_view "b" : !hal.buffer_view -> tensor<?xf32>{%n}
  %init = tensor.empty(%n) : tensor<?xf32>
  %result = flow.dispatch.region[%groups] -> (tensor<?xf32>{%n}) {
    %group = flow.dispatch.workgroup.id[0] : index
    %count = flow.dispatch.workgroup.count[0] : index
    %tile = affine.apply affine_map<()[s0, s1] -> (s0 ceildiv s1)>()[%n, %count]
    %first = affine.min affine_map<()[s0, s1, s2] -> (s0 * s1, s2)>()[%group, %tile, %n]
    %size = affine.min affine_map<()[s0, s1, s2] -> (s1, s2 - s0)>()[%first, %tile, %n]
    %lhs = tensor.extract_slice %a[%first] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %rhs = tensor.extract_slice %b[%first] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %out = tensor.extract_slice %init[%first] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %product = iree_codegen.ukernel.generic "simple_mul_workgroup"
      ins(%lhs, %rhs : tensor<?xf32>, tensor<?xf32>)
      outs(%out : tensor<?xf32>)
      (%size, %group : index, index)
      fn_def_attrs {hal.import.fields = ["processor_id", "processor_data"]}
      strided_dims([[], [], []]) -> tensor<?xf32>
    %whole = tensor.insert_slice %product into %init[%first] [%size] [1]
        : tensor<?xf32> into tensor<?xf32>
    flow.return %whole : tensor<?xf32>
  } count(%workload: index) -> (index, index, index) {
    flow.return %workload, %one, %one : index, index, index
  }
  %exported = hal.tensor.export %result "product" : tensor<?xf32>{%n} -> !hal.buffer_view
  return %exported : !hal.buffer_view
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
// RUN:   iree-run-module --device=local-sync --module=- --function=mul --input=1xf32=3 --input=1xf32=5 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-sync --module=- --function=mul --input=1xf32=3 --input=1xf32=5 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul --input=1xf32=3 --input=1xf32=5 --executable_plugin=%plugin{xplug_e2e_print} | \
// RUN:   filecheck %s
// RUN: iree-compile %s --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic | \
// RUN:   iree-run-module --device=local-task --module=- --function=mul --input=1xf32=3 --input=1xf32=5 --executable_plugin=%plugin{print_plugin} | \
// RUN:   filecheck %s
//
// CHECK: EXEC @mul
// CHECK-NEXT: workgroup 0: 3 * 5 = 15
// CHECK-NEXT: result[0]: hal.buffer_view
// CHECK-NEXT: 1xf32=15
