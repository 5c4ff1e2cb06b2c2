// test: ptx
// max propagates NaN: on sm_80 and newer one `max.NaN.f32` does it.
func @main(%a: f32[64], %b: f32[64]) -> (y: f32[64]) {
  %y = max %a, %b
  return %y
}
// CHECK: .target sm_90
// CHECK: max.NaN.f32
