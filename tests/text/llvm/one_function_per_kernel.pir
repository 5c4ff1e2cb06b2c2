// test: llvm
// Two kernels (a max reduction and an elementwise negation): one function
// each, named after the kernel, with the same signature.
func @main(%x: f32[64]) -> (s: f32[], y: f32[64]) {
  %s = reduce %x {dims=[0], kind=max}
  %y = neg %x
  return %s, %y
}
// CHECK: define void @k0_s(ptr noalias %bufs, i64 %begin, i64 %end)
// CHECK: @llvm.maximum.
// CHECK: define void @k1_y(ptr noalias %bufs, i64 %begin, i64 %end)
// CHECK: fneg <8 x float>
// CHECK-NOT: define
