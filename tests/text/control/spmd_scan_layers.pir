// test: spmd
// A layer stack as one scan over stacked weights (flax nn.scan): the weights
// are split over model on their output features, the hidden state over data
// on the batch; each step gathers its activations over model (inside the
// step, per iteration) to keep the carried state's one sharding.
mesh [data=2, model=2]

func @layer(%h: f32[8,16], %w: f32[16,16], %b: f32[16]) -> (f32[8,16], f32[8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,16]
  %bb = broadcast %b {dims=[1]} : f32[8,16]
  %z = add %y, %bb
  %t = tanh %z : f32[8,16] on [data, _]
  %s = reduce %t {dims=[1], kind=sum}
  return %t, %s
}

func @main(%h: f32[8,16] on [data, _], %ws: f32[3,16,16] on [_, _, model], %bs: f32[3,16]) -> (out: f32[8,16] on [data, _], sums: f32[3,8]) {
  %h2, %sums = scan @layer(%h, %ws, %bs) {length=3, carries=1}
  return %h2, %sums
}
