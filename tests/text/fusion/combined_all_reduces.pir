// test: plan
// Two partial sums over the split batch (two gradients): the all-reduce
// combiner sends them as one message, so the plan has one collective step
// over both, concatenated, and slices them apart after.
mesh [data=2]

func @main(%x: f32[8,4] on [data, _], %d: f32[8,3] on [data, _]) -> (gw: f32[4,3], gb: f32[3]) {
  %gw = dot_general %x, %d {lhs_contract=[0], rhs_contract=[0]}
  %gb = reduce %d {dims=[0], kind=sum}
  return %gw, %gb
}
