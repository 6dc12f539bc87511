// Compute-bound benchmark program (`cargo xtask model-bench`): one
// 1024x1024 by 1024x1024 f32 matrix product, a handful of dispatches that
// run for a few hundred milliseconds.
module @large_matmul {
  func.func @matmul(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<1024x1024xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    %c = linalg.matmul ins(%a, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>)
                       outs(%init : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    return %c : tensor<1024x1024xf32>
  }
}
