// test: spmd
// Row-parallel matmul (Megatron's second layer): the contracted dimension is
// split over model on both operands, so each device holds a partial sum and one
// all_reduce (sum) over model finishes it; nothing else moves.
mesh [model=4]

func @main(%a: f32[8,16] on [_, model], %w: f32[16,6] on [model, _]) -> (y: f32[8,6]) {
  %y = dot_general %a, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
