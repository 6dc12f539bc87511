// The embedding example's program: `@scaled_add(a, b) = a + k * b`, where
// the imported `scaled_add_workgroup` (the kernel linked into the example,
// with its load parameter `k`) computes each workgroup's slice.
//
// The `n` elements are cut into 4 slices of `ceil(n / 4)` elements, the
// last ones shorter or empty. IREE passes each operand as base pointer +
// element offset, then the slice length and the workgroup id, then the
// fields of `hal.import.fields`: exactly `ScaledAddArgs`.
//
// Both inputs are imported with `a`'s length, so IREE refuses a `b` of
// another length before anything runs (docs/src/plugins/dispatch.md, "Tie the inputs'
// shapes").
func.func @scaled_add(%a_view: !hal.buffer_view, %b_view: !hal.buffer_view) -> !hal.buffer_view {
  %one = arith.constant 1 : index
  %groups = arith.constant 4 : index
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
    %sum = iree_codegen.ukernel.generic "scaled_add_workgroup"
      ins(%lhs, %rhs : tensor<?xf32>, tensor<?xf32>)
      outs(%out : tensor<?xf32>)
      (%size, %group : index, index)
      fn_def_attrs {hal.import.fields = ["processor_id", "processor_data"]}
      strided_dims([[], [], []]) -> tensor<?xf32>
    %whole = tensor.insert_slice %sum into %init[%first] [%size] [1]
        : tensor<?xf32> into tensor<?xf32>
    flow.return %whole : tensor<?xf32>
  } count(%workload: index) -> (index, index, index) {
    flow.return %workload, %one, %one : index, index, index
  }
  %exported = hal.tensor.export %result "sum" : tensor<?xf32>{%n} -> !hal.buffer_view
  return %exported : !hal.buffer_view
}
