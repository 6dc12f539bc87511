// xplug end-to-end program: an executable that `func.call`s an imported
// kernel with a reduction, `out = max(a × b, 0)`, one call per block of up
// to 16 rows (the last block is shorter when the row count is not a
// multiple of 16).
//
// Workgroup `w` passes `a`'s and `out`'s base pointers with offsets
// advanced to row `16 * w`, all of `b`, the block's row count and the
// matrices' other sizes; the import also receives the processor id and
// data IREE appends when asked for them with `hal.import.fields`. Linked
// instead of imported (`docs/src/plugins/dispatch.md#linked-kernels`), the declaration
// says `hal.import.static` and the executable lists the objects.
module @xplug_matmul_relu_call {
  stream.executable private @kernels {
    stream.executable.export public @matmul_rows workgroups(%m: index, %n: index, %k: index) -> (index, index, index) {
      %groups = affine.apply affine_map<()[s0] -> (s0 ceildiv 16)>()[%m]
      %one = arith.constant 1 : index
      stream.return %groups, %one, %one : index, index, index
    }
    builtin.module {
      func.func private @matmul_relu_workgroup(
          %lhs: memref<f32>, %lhs_offset: index,
          %rhs: memref<f32>, %rhs_offset: index,
          %out: memref<f32>, %out_offset: index,
          %m: index, %n: index, %k: index) attributes {
        hal.import.fields = ["processor_id", "processor_data"],
        llvm.bareptr = true
      }
      func.func @matmul_rows(%lhs_binding: !stream.binding, %rhs_binding: !stream.binding,
                             %out_binding: !stream.binding, %m: index, %n: index, %k: index) {
        %zero = arith.constant 0 : index
        %group = stream.dispatch.workgroup.id[0] : index
        %first = affine.apply affine_map<()[s0] -> (s0 * 16)>()[%group]
        %rows = affine.min affine_map<()[s0, s1] -> (16, s1 - s0)>()[%first, %m]
        %lhs = stream.binding.subspan %lhs_binding[%zero] : !stream.binding -> memref<?x?xf32>{%m, %k}
        %rhs = stream.binding.subspan %rhs_binding[%zero] : !stream.binding -> memref<?x?xf32>{%k, %n}
        %out = stream.binding.subspan %out_binding[%zero] : !stream.binding -> memref<?x?xf32>{%m, %n}
        %lhs_base, %lhs_offset, %lhs_sizes:2, %lhs_strides:2 = memref.extract_strided_metadata %lhs
            : memref<?x?xf32> -> memref<f32>, index, index, index, index, index
        %rhs_base, %rhs_offset, %rhs_sizes:2, %rhs_strides:2 = memref.extract_strided_metadata %rhs
            : memref<?x?xf32> -> memref<f32>, index, index, index, index, index
        %out_base, %out_offset, %out_sizes:2, %out_strides:2 = memref.extract_strided_metadata %out
            : memref<?x?xf32> -> memref<f32>, index, index, index, index, index
        %lhs_start = affine.apply affine_map<()[s0, s1, s2] -> (s0 + s1 * s2)>()[%lhs_offset, %first, %k]
        %out_start = affine.apply affine_map<()[s0, s1, s2] -> (s0 + s1 * s2)>()[%out_offset, %first, %n]
        func.call @matmul_relu_workgroup(%lhs_base, %lhs_start, %rhs_base, %rhs_offset,
                                         %out_base, %out_start, %rows, %n, %k)
            : (memref<f32>, index, memref<f32>, index, memref<f32>, index, index, index, index) -> ()
        return
      }
    }
  }

  func.func @matmul_relu(%a_view: !hal.buffer_view, %b_view: !hal.buffer_view) -> !hal.buffer_view {
    %m = hal.buffer_view.dim<%a_view : !hal.buffer_view>[0] : index
    %k = hal.buffer_view.dim<%a_view : !hal.buffer_view>[1] : index
    %n = hal.buffer_view.dim<%b_view : !hal.buffer_view>[1] : index
    %a = hal.tensor.import %a_view "a" : !hal.buffer_view -> tensor<?x?xf32>{%m, %k}
    %b = hal.tensor.import %b_view "b" : !hal.buffer_view -> tensor<?x?xf32>{%k, %n}
    %product = flow.dispatch @kernels::@matmul_rows[%m, %n, %k](%a, %b, %m, %n, %k)
        : (tensor<?x?xf32>{%m, %k}, tensor<?x?xf32>{%k, %n}, index, index, index) -> tensor<?x?xf32>{%m, %n}
    %exported = hal.tensor.export %product "product" : tensor<?x?xf32>{%m, %n} -> !hal.buffer_view
    return %exported : !hal.buffer_view
  }
}
