// test: llvm
// `mul` then `add` stay a multiply and an add, rounded separately: a fused
// multiply-add would round once and differ from the interpreter (and from the
// PTX and the other devices).
func @main(%a: f32[256], %b: f32[256], %c: f32[256]) -> (r: f32[256]) {
  %m = mul %a, %b
  %r = add %m, %c
  return %r
}
// CHECK-NOT: fma
// CHECK: define void @k0_r(
// CHECK-NOT: contract
// CHECK: fmul <8 x float>
// CHECK-NOT: fma
// CHECK: fadd <8 x float>
// CHECK-NOT: fma
