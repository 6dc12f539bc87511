// Every element type a model uses, in and out: each signless integer and
// float input comes back changed (`x + 1`, `x + x`), the signed
// and unsigned ones as given.
module @element_types {
  func.func @types(%i8: tensor<3xi8>, %i16: tensor<3xi16>, %i32: tensor<3xi32>,
                   %i64: tensor<3xi64>, %f16: tensor<3xf16>, %bf16: tensor<3xbf16>, %f32: tensor<3xf32>,
                   %f64: tensor<3xf64>, %u8: tensor<3xui8>, %u16: tensor<3xui16>, %u32: tensor<3xui32>,
                   %u64: tensor<3xui64>, %s8: tensor<3xsi8>, %s64: tensor<3xsi64>)
      -> (tensor<3xi8>, tensor<3xi16>, tensor<3xi32>, tensor<3xi64>, tensor<3xf16>,
          tensor<3xbf16>, tensor<3xf32>, tensor<3xf64>, tensor<3xui8>, tensor<3xui16>, tensor<3xui32>,
          tensor<3xui64>, tensor<3xsi8>, tensor<3xsi64>) {
    %c8 = arith.constant dense<1> : tensor<3xi8>
    %r8 = arith.addi %i8, %c8 : tensor<3xi8>
    %c16 = arith.constant dense<1> : tensor<3xi16>
    %r16 = arith.addi %i16, %c16 : tensor<3xi16>
    %c32 = arith.constant dense<1> : tensor<3xi32>
    %r32 = arith.addi %i32, %c32 : tensor<3xi32>
    %c64 = arith.constant dense<1> : tensor<3xi64>
    %r64 = arith.addi %i64, %c64 : tensor<3xi64>
    %rf16 = arith.addf %f16, %f16 : tensor<3xf16>
    %rbf16 = arith.addf %bf16, %bf16 : tensor<3xbf16>
    %rf32 = arith.addf %f32, %f32 : tensor<3xf32>
    %rf64 = arith.addf %f64, %f64 : tensor<3xf64>
    return %r8, %r16, %r32, %r64, %rf16, %rbf16, %rf32, %rf64, %u8, %u16, %u32, %u64, %s8, %s64
        : tensor<3xi8>, tensor<3xi16>, tensor<3xi32>, tensor<3xi64>, tensor<3xf16>,
          tensor<3xbf16>, tensor<3xf32>, tensor<3xf64>, tensor<3xui8>, tensor<3xui16>, tensor<3xui32>,
          tensor<3xui64>, tensor<3xsi8>, tensor<3xsi64>
  }
}
