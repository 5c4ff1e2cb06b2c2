// test: llvm
// An f32 elementwise kernel on the x86-64-v3 baseline is vectorized 8 wide
// (AVX2): 8-float loads, adds and stores, with a scalar loop for the rest.
// The kernel is `void k(i8** bufs, i64 begin, i64 end)`.
func @main(%a: f32[1024], %b: f32[1024]) -> (r: f32[1024]) {
  %r = add %a, %b
  return %r
}
// CHECK: target triple = "x86_64-unknown-linux-gnu"
// CHECK: define void @k0_r(ptr noalias %bufs, i64 %begin, i64 %end)
// CHECK: load <8 x float>
// CHECK: fadd <8 x float>
// CHECK: store <8 x float>
// CHECK: fadd float
// CHECK: "target-cpu"="x86-64-v3"
