// test: ptx --gpu-arch sm_70
// Volta has no `max.NaN`: a NaN test selects the canonical NaN, and equal
// zeros are resolved so that -0.0 orders below +0.0.
func @main(%a: f32[64], %b: f32[64]) -> (y: f32[64]) {
  %y = max %a, %b
  return %y
}
// CHECK: .target sm_70
// CHECK-NOT: max.NaN
// CHECK: setp.nan.f32
// CHECK-NEXT: max.f32
// CHECK-NEXT: 0f7FC00000
