// test: spmd
// ZeRO: the optimizer state %m is split over data (`on [data, _]`, as
// MaxText's shard_optimizer_over_data writes it) while the weight %w is
// replicated. The gradient's partial sums are reduce-scattered straight onto
// the state's split (half the bytes of an all_reduce), the momentum update
// runs on each device's quarter (the weight's quarter is a free local slice),
// and the new weight is all-gathered once, for the replicated result (the
// loss's all_reduce is the step's only other collective):
// reduce_scatter + all_gather = the bytes of the all_reduce, with 1/4 of the
// state and of the update per device.
mesh [data=4]

func @loss(%w: f32[8,4], %x: f32[16,8], %y: f32[16,4]) -> (f32[]) {
  %p = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[16,4]
  %d = sub %p, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%x: f32[16,8] on [data, _], %y: f32[16,4] on [data, _], %w: f32[8,4], %m: f32[8,4] on [data, _])
    -> (loss: f32[], w: f32[8,4], m: f32[8,4] on [data, _]) {
  %l, %g = grad @loss(%w, %x, %y) {wrt=[0]} : (f32[], f32[8,4])
  %beta = constant 0.9 : f32[8,4]
  %mb = mul %beta, %m
  %mn = add %mb, %g
  %lr = constant 0.1 : f32[8,4]
  %u = mul %lr, %mn
  %wn = sub %w, %u
  return %l, %wn, %mn
}
