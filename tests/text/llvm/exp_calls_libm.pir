// test: llvm
// exp is a call of the C library's expf (the scalar remainder loop; the
// vectorized loop calls glibc's libmvec `_ZGVdN8v_expf` where the machine has
// it, LLVM's `llvm.exp.v8f32` otherwise, so only the scalar call is checked).
func @main(%x: f32[512]) -> (y: f32[512]) {
  %y = exp %x
  return %y
}
// CHECK: define void @k0_y(
// CHECK: call float @expf(float
// CHECK: declare float @expf(float)
