// test: ptx
// tanh from libdevice (`__nv_tanhf`), inlined: its polynomial (fma) and the
// exp2/reciprocal path for large arguments, no call.
func @main(%x: f32[100]) -> (y: f32[100]) {
  %y = tanh %x
  return %y
}
// CHECK-NOT: call
// CHECK: .visible .entry k0_y(
// CHECK: ex2.approx
// CHECK: rcp.approx
// CHECK: fma.rn.f32
// CHECK-NOT: call
