// test: sharded
// vmap of a per-example function over a batch split on data: the batched
// values keep the split on the new dimension.
mesh [data=4]

func @per_example(%x: f32[16], %w: f32[16,8]) -> (f32[8]) {
  %y = dot_general %x, %w {lhs_contract=[0], rhs_contract=[0]}
  %t = tanh %y
  return %t
}

func @main(%xs: f32[32,16] on [data, _], %w: f32[16,8]) -> (ys: f32[32,8] on [data, _]) {
  %ys = vmap @per_example(%xs, %w) {in_dims=[0, none], out_dims=[0]} : f32[32,8]
  return %ys
}
