// test: ptx
// f64 sqrt is the correctly rounded `sqrt.rn.f64`, and the multiply `mul.rn`.
func @main(%a: f64[256]) -> (y: f64[256]) {
  %s = sqrt %a
  %y = mul %s, %a
  return %y
}
// CHECK: ld.global.b64
// CHECK: sqrt.rn.f64
// CHECK: mul.rn.f64
// CHECK: st.global.b64
