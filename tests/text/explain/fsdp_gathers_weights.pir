// test: explain
// FSDP: the weights are split over data like the batch (`on [data, _]`),
// so each product of the forward pass meets an axis that splits both its
// contracted dimension (the weight's rows) and the batch its result keeps.
// The partitioner prices both plans: contracting the rows split moves the
// activation (an all_to_all of %x) and reduce-scatters the partial product
// (55296 B for %z1), gathering the weight costs the weight (6144 B). With
// 256 rows of batch and 32 x 64 weights, each weight is all-gathered before
// its forward product, that gathered copy serves the backward product too
// (%w2 is gathered once, not again for %h.ct), and each gradient is
// reduce-scattered onto the weight's split: all_gather + reduce_scatter =
// the bytes of the all_reduce of the replicated-weight step (2 x 3/4 x
// (8192 + 2048) = 15360 B), with a quarter of every weight stored per device.
mesh [data=4]

func @loss(%w1: f32[32,64], %w2: f32[64,8], %x: f32[256,32], %y: f32[256,8]) -> (f32[]) {
  %z1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[256,64]
  %h = tanh %z1
  %o = dot_general %h, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[256,8]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%x: f32[256,32] on [data, _], %y: f32[256,8] on [data, _],
           %w1: f32[32,64] on [data, _], %w2: f32[64,8] on [data, _])
    -> (loss: f32[], w1: f32[32,64] on [data, _], w2: f32[64,8] on [data, _]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x, %y) {wrt=[0,1]} : (f32[], f32[32,64], f32[64,8])
  %k1 = constant 0.01 : f32[32,64]
  %u1 = mul %g1, %k1
  %w1n = sub %w1, %u1
  %k2 = constant 0.01 : f32[64,8]
  %u2 = mul %g2, %k2
  %w2n = sub %w2, %u2
  return %l, %w1n, %w2n
}

// CHECK: collectives inserted by the partitioner
// CHECK-NOT: all_to_all
// CHECK: %w1.ag        all_gather         over [data]        6144 B  operand 1 of dot_general %z1 (to keep the result's split, 6144 B in all, against 55296 B with the contracting dimension split over data): [data, _] -> [_, _]
// CHECK-NEXT: %w2.ag        all_gather         over [data]        1536 B  operand 1 of dot_general %o (to keep the result's split, 1536 B in all, against 18432 B
// CHECK-NEXT: %l.ar         all_reduce         over [data]           6 B
// CHECK-NEXT: %w2.ct.rs     reduce_scatter     over [data]        1536 B  dot_general %w2.ct
// CHECK-NEXT: %w1.ct.rs     reduce_scatter     over [data]        6144 B  dot_general %w1.ct
// CHECK-NEXT: total: 5 collectives, 15366 B per device
