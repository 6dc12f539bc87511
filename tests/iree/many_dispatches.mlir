// Dispatch-bound benchmark program (`cargo xtask model-bench`): `%n` small
// matrix products in a row, each one dispatch, each reading the last one's
// result, so the compiler can neither hoist nor fuse them. With `%b` all
// 1/16 and `%a` all ones, every product (and the result) is all ones.
module @many_dispatches {
  func.func @chain(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %n: i32) -> tensor<16x16xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %count = arith.index_cast %n : i32 to index
    %result = scf.for %i = %c0 to %count step %c1 iter_args(%acc = %a) -> (tensor<16x16xf32>) {
      %empty = tensor.empty() : tensor<16x16xf32>
      %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x16xf32>) -> tensor<16x16xf32>
      %next = linalg.matmul ins(%acc, %b : tensor<16x16xf32>, tensor<16x16xf32>)
                            outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
      scf.yield %next : tensor<16x16xf32>
    }
    return %result : tensor<16x16xf32>
  }
}
