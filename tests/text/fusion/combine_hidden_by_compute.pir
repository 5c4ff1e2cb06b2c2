// test: plan
// The all-reduce combiner splits by readiness: %g1's partial sums are ready
// long before %g2's, and the product between them (2 GFLOP per device)
// takes far longer than %g1's all-reduce at the cost model's CPU figures, so
// %g1 travels alone right after it is computed (to overlap that product)
// instead of waiting to share one message with %g2. %g2 and %g3 have nothing
// between them and share one.
mesh [data=2]

func @main(%x: f32[64,128] on [data, _], %y: f32[64,32] on [data, _], %z: f32[64,32] on [data, _], %a: f32[1024,1024], %b: f32[1024,1024]) -> (g1: f32[128,32], big: f32[1024,1024], g2: f32[128,32], g3: f32[128,32]) {
  %g1 = dot_general %x, %y {lhs_contract=[0], rhs_contract=[0]} : f32[128,32]
  %big = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[1024,1024]
  %g2 = dot_general %x, %z {lhs_contract=[0], rhs_contract=[0]} : f32[128,32]
  %zz = tanh %z
  %g3 = dot_general %x, %zz {lhs_contract=[0], rhs_contract=[0]} : f32[128,32]
  return %g1, %big, %g2, %g3
}
