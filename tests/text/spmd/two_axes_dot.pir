// test: spmd
// A 2-D mesh: the batch split over data passes through, the contraction split
// over model makes partial sums: the all_reduce runs over model only (groups of
// the devices that share a data position).
mesh [data=2, model=2]

func @main(%x: f32[8,12] on [data, model], %w: f32[12,5] on [model, _]) -> (y: f32[8,5] on [data, _]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
