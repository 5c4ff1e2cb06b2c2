// test: spmd
// Partial sums over the split batch whose result is wanted split over the
// same axis: one reduce_scatter (not an all_reduce followed by a slice).
mesh [data=2]

func @main(%x: f32[8,4] on [data, _], %d: f32[8,6] on [data, _]) -> (g: f32[4,6] on [data, _]) {
  %g = dot_general %x, %d {lhs_contract=[0], rhs_contract=[0]}
  return %g
}
