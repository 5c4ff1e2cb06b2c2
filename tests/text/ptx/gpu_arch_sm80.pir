// test: ptx --gpu-arch sm_80
// --gpu-arch picks the PTX target (here Ampere); the harness assembles the
// output with ptxas for the same architecture.
func @main(%a: f32[64], %b: f32[64]) -> (r: f32[64]) {
  %r = sub %a, %b
  return %r
}
// CHECK: .target sm_80
// CHECK-NOT: sm_90
// CHECK: .visible .entry k0_r(
// CHECK: sub.rn.f32
