// Imports `double_lib.double` from the module loaded before it
// (double_lib.mlir) and calls it twice: `@quadruple(x)` is `4 * x`.
module @main_mod {
  func.func private @double_lib.double(tensor<4xf32>) -> tensor<4xf32>
  func.func @quadruple(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = call @double_lib.double(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %z = call @double_lib.double(%y) : (tensor<4xf32>) -> tensor<4xf32>
    return %z : tensor<4xf32>
  }
}
