// Functions without imports whose arguments and results are not 1-D
// tensors: scalars (`i32`, `f32`) and a 0-d tensor. `xplug run` must take
// and print them as `iree-run-module` does (crates/cli/tests/run.rs).

func.func @double(%arg0: i32) -> i32 {
  %0 = arith.addi %arg0, %arg0 : i32
  return %0 : i32
}

func.func @scale(%arg0: f32, %arg1: i64) -> (f32, i64) {
  %0 = arith.sitofp %arg1 : i64 to f32
  %1 = arith.mulf %arg0, %0 : f32
  %2 = arith.addi %arg1, %arg1 : i64
  return %1, %2 : f32, i64
}

func.func @square(%arg0: tensor<f32>) -> tensor<f32> {
  %0 = arith.mulf %arg0, %arg0 : tensor<f32>
  return %0 : tensor<f32>
}
