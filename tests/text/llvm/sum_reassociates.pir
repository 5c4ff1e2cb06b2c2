// test: llvm
// A sum over 1,000 elements may reassociate (the spec's tolerance for
// reductions): the adds carry `reassoc`, so LLVM keeps 8-wide partial sums and
// adds the lanes up at the end of the row.
func @main(%x: f32[16,1000]) -> (s: f32[16]) {
  %s = reduce %x {dims=[1], kind=sum}
  return %s
}
// CHECK: define void @k0_s(
// CHECK: fadd reassoc <8 x float>
// CHECK: @llvm.vector.reduce.fadd.v8f32(float -0.000000e+00
// CHECK: store float
