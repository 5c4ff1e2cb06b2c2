// A contraction over the split batch whose result is wanted split: a
// reduce_scatter instead of an all_reduce (like data-parallel gradients feeding
// a sharded optimizer state).
mesh [data=4]

func @main(%x: f32[16,8] on [data, _], %d: f32[16,12] on [data, _]) -> (g: f32[8,12] on [data, _]) {
  %g = dot_general %x, %d {lhs_contract=[0], rhs_contract=[0]} : f32[8,12]
  return %g
}
