// test: explain
// The other side of the price comparison in fsdp_gathers_weights.pir: a
// batch of 16 rows against a 256 x 64 weight split over data like the
// batch. Gathering the weight would send 49152 B; contracting its rows
// split sends the activation's moved quarter (an all_to_all of %x, 3072 B)
// and reduce-scatters the small partial product (3072 B), so the
// partitioner keeps the contraction split. The gradient's product then
// finds %x already split the weight's way (the all_to_all is reused), so
// keeping its result's split costs only a gather of the small output
// gradient (3072 B) instead of reduce-scattering the whole weight gradient
// (49152 B): 9222 B in all, against the 98310 B of the replicated-weight
// step's all_reduces.
mesh [data=4]

func @loss(%w: f32[256,64], %x: f32[16,256], %y: f32[16,64]) -> (f32[]) {
  %z = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[16,64]
  %d = sub %z, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%x: f32[16,256] on [data, _], %y: f32[16,64] on [data, _], %w: f32[256,64] on [data, _])
    -> (loss: f32[], w: f32[256,64] on [data, _]) {
  %l, %g = grad @loss(%w, %x, %y) {wrt=[0]} : (f32[], f32[256,64])
  %k = constant 0.01 : f32[256,64]
  %u = mul %g, %k
  %wn = sub %w, %u
  return %l, %wn
}

// CHECK: collectives inserted by the partitioner
// CHECK: %x.a2a        all_to_all         over [data]        3072 B  operand 0 of dot_general %z: [data, _] -> [_, data]
// CHECK-NEXT: %z.rs         reduce_scatter     over [data]        3072 B  dot_general %z has its contracting dimension split over data
// CHECK-NEXT: %l.ar         all_reduce         over [data]           6 B
// CHECK-NEXT: %d.ct.2.ag    all_gather         over [data]        3072 B  operand 1 of dot_general %w.ct (to keep the result's split, 3072 B in all, against 49152 B with the contracting dimension split over data): [data, _] -> [_, _]
// CHECK-NEXT: total: 4 collectives, 9222 B per device
