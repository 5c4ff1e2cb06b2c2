// One SGD training step of the MLP in mlp.pir, written JAX-style: the forward
// pass is a function, `grad` gives the loss and its gradients, and the new
// parameters are results named like the parameters (state carry), so a driver
// can feed them back step after step. The batch is split over 4 devices.
mesh [data=4]

func @loss(%w1: f32[784,128], %b1: f32[128], %w2: f32[128,10], %b2: f32[10],
           %x: f32[64,784], %labels: f32[64,10]) -> (f32[]) {
  %xw1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,128]
  %b1b = broadcast %b1 {dims=[1]} : f32[64,128]
  %z1 = add %xw1, %b1b
  %zero = constant 0.0 : f32[64,128]
  %h = max %z1, %zero
  %hw2 = dot_general %h, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,10]
  %b2b = broadcast %b2 {dims=[1]} : f32[64,10]
  %logits = add %hw2, %b2b
  %rowmax = reduce %logits {dims=[1], kind=max} : f32[64]
  %rowmax.b = broadcast %rowmax {dims=[0]} : f32[64,10]
  %shifted = sub %logits, %rowmax.b
  %e = exp %shifted
  %sumexp = reduce %e {dims=[1], kind=sum} : f32[64]
  %lse = log %sumexp
  %lse.b = broadcast %lse {dims=[0]} : f32[64,10]
  %logp = sub %shifted, %lse.b
  %picked = mul %labels, %logp
  %total = reduce %picked {dims=[0,1], kind=sum} : f32[]
  %nll = neg %total
  %batch = constant 64.0 : f32[]
  %loss = div %nll, %batch
  return %loss
}

func @main(%x: f32[64,784] on [data, _], %labels: f32[64,10] on [data, _],
           %w1: f32[784,128], %b1: f32[128], %w2: f32[128,10], %b2: f32[10])
    -> (loss: f32[], w1: f32[784,128], b1: f32[128], w2: f32[128,10], b2: f32[10]) {
  %l, %g1, %gb1, %g2, %gb2 = grad @loss(%w1, %b1, %w2, %b2, %x, %labels) {wrt=[0,1,2,3]} : (f32[], f32[784,128], f32[128], f32[128,10], f32[10])
  %lr1 = constant 0.1 : f32[784,128]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lrb1 = constant 0.1 : f32[128]
  %ub1 = mul %gb1, %lrb1
  %b1n = sub %b1, %ub1
  %lr2 = constant 0.1 : f32[128,10]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  %lrb2 = constant 0.1 : f32[10]
  %ub2 = mul %gb2, %lrb2
  %b2n = sub %b2, %ub2
  return %l, %w1n, %b1n, %w2n, %b2n
}
