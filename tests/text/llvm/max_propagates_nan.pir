// test: llvm
// max propagates NaN and orders -0.0 below +0.0: LLVM's `maximum`, never
// `maxnum` (which drops NaNs).
func @main(%a: f32[64], %b: f32[64]) -> (y: f32[64]) {
  %y = max %a, %b
  return %y
}
// CHECK-NOT: maxnum
// CHECK: @llvm.maximum.v8f32(<8 x float>
// CHECK: @llvm.maximum.f32(float
// CHECK-NOT: maxnum
