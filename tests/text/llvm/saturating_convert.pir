// test: llvm
// float -> int conversion truncates and saturates, NaN -> 0 (spec section 11):
// LLVM's saturating intrinsic, vectorized, not a plain fptosi (undefined out
// of range).
func @main(%x: f32[64]) -> (y: i32[64]) {
  %y = convert %x : i32[64]
  return %y
}
// CHECK-NOT: fptosi float
// CHECK: @llvm.fptosi.sat.v8i32.v8f32(<8 x float>
// CHECK: @llvm.fptosi.sat.i32.f32(float
