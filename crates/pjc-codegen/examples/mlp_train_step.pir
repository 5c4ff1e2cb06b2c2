// One SGD training step of a two-layer MLP (784 -> 512 -> 10, ReLU) with a
// softmax cross-entropy loss on a batch of 256, backward pass written out by
// hand (no `grad`), so that the plan has GEMMs, fused elementwise kernels and
// reductions. The updated weights are carried state (result name = parameter).
func @main(%x: f32[256,784], %labels: f32[256,10],
           %w1: f32[784,512], %b1: f32[512],
           %w2: f32[512,10], %b2: f32[10])
    -> (loss: f32[], w1: f32[784,512], b1: f32[512], w2: f32[512,10], b2: f32[10]) {
  %xw1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[256,512]
  %b1b = broadcast %b1 {dims=[1]} : f32[256,512]
  %z1 = add %xw1, %b1b
  %zero = constant 0.0 : f32[256,512]
  %h = max %z1, %zero
  %hw2 = dot_general %h, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[256,10]
  %b2b = broadcast %b2 {dims=[1]} : f32[256,10]
  %logits = add %hw2, %b2b
  %rowmax = reduce %logits {dims=[1], kind=max} : f32[256]
  %rowmax.b = broadcast %rowmax {dims=[0]} : f32[256,10]
  %shifted = sub %logits, %rowmax.b
  %e = exp %shifted
  %sumexp = reduce %e {dims=[1], kind=sum} : f32[256]
  %lse = log %sumexp
  %lse.b = broadcast %lse {dims=[0]} : f32[256,10]
  %logp = sub %shifted, %lse.b
  %picked = mul %labels, %logp
  %total = reduce %picked {dims=[0,1], kind=sum} : f32[]
  %nll = neg %total
  %batch = constant 256 : f32[]
  %loss = div %nll, %batch
  // backward
  %p = exp %logp
  %diff = sub %p, %labels
  %batch.b = constant 256 : f32[256,10]
  %dlogits = div %diff, %batch.b
  %dw2 = dot_general %h, %dlogits {lhs_contract=[0], rhs_contract=[0]} : f32[512,10]
  %db2 = reduce %dlogits {dims=[0], kind=sum} : f32[10]
  %dh = dot_general %dlogits, %w2 {lhs_contract=[1], rhs_contract=[1]} : f32[256,512]
  %pos = compare %z1, %zero {dir=gt}
  %dz1 = select %pos, %dh, %zero
  %dw1 = dot_general %x, %dz1 {lhs_contract=[0], rhs_contract=[0]} : f32[784,512]
  %db1 = reduce %dz1 {dims=[0], kind=sum} : f32[512]
  // SGD, learning rate 0.1
  %lr1 = constant 0.1 : f32[784,512]
  %s1 = mul %dw1, %lr1
  %w1n = sub %w1, %s1
  %lrb1 = constant 0.1 : f32[512]
  %t1 = mul %db1, %lrb1
  %b1n = sub %b1, %t1
  %lr2 = constant 0.1 : f32[512,10]
  %s2 = mul %dw2, %lr2
  %w2n = sub %w2, %s2
  %lrb2 = constant 0.1 : f32[10]
  %t2 = mul %db2, %lrb2
  %b2n = sub %b2, %t2
  return %loss, %w1n, %b1n, %w2n, %b2n
}
