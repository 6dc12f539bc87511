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
// (docs/dispatch.md, "Tie the inputs' shapes").
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
