// test: ptx
// f16 elements: 4 halves per vector load, arithmetic in f32, results rounded
// back to f16 and stored as 16-bit values.
func @main(%a: f16[64], %b: f16[64]) -> (r: f16[64]) {
  %r = mul %a, %b
  return %r
}
// CHECK: .visible .entry k0_r(
// CHECK: ld.global.v4.b16
// CHECK: mul.rn.f32
// CHECK: st.global.b16
