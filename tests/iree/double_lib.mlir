// A module another imports from: `@double(x)` returns `x + x`. Run with
// `--module=double_lib.vmfb --module=quadruple.vmfb` (see quadruple.mlir).
module @double_lib {
  func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = arith.addf %x, %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
