// A data-parallel MLP training step at a size users train: 4 hidden layers of
// 1024 units, batch 512 split over the data axis, squared loss against a 16-wide
// head, plain SGD. Each layer's weight gradient is all-reduced in its own bucket
// (its product is long enough to hide the previous bucket's message), so the
// all-reduces of the later layers run while the earlier layers' backward pass
// is computed (docs/training.md, "Collectives overlapped with compute").
mesh [data=2]

func @loss(%w1: f32[1024,1024], %w2: f32[1024,1024], %w3: f32[1024,1024], %w4: f32[1024,1024], %head: f32[1024,16], %x: f32[512,1024], %y: f32[512,16]) -> (f32[]) {
  %h0 = tanh %x
  %z1 = dot_general %h0, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]
  %h1 = tanh %z1
  %z2 = dot_general %h1, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]
  %h2 = tanh %z2
  %z3 = dot_general %h2, %w3 {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]
  %h3 = tanh %z3
  %z4 = dot_general %h3, %w4 {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]
  %h4 = tanh %z4
  %o = dot_general %h4, %head {lhs_contract=[1], rhs_contract=[0]} : f32[512,16]
  %d = sub %o, %y
  %sq = mul %d, %d
  %total = reduce %sq {dims=[0,1], kind=sum} : f32[]
  %n = constant 512.0 : f32[]
  %l = div %total, %n
  return %l
}

func @main(%w1: f32[1024,1024], %w2: f32[1024,1024], %w3: f32[1024,1024], %w4: f32[1024,1024], %head: f32[1024,16], %x: f32[512,1024] on [data, _], %y: f32[512,16] on [data, _])
    -> (loss: f32[], w1: f32[1024,1024], w2: f32[1024,1024], w3: f32[1024,1024], w4: f32[1024,1024]) {
  %l, %g1, %g2, %g3, %g4 = grad @loss(%w1, %w2, %w3, %w4, %head, %x, %y) {wrt=[0,1,2,3]} : (f32[], f32[1024,1024], f32[1024,1024], f32[1024,1024], f32[1024,1024])
  %lr = constant 0.01 : f32[1024,1024]
  %u1 = mul %g1, %lr
  %w1n = sub %w1, %u1
  %u2 = mul %g2, %lr
  %w2n = sub %w2, %u2
  %u3 = mul %g3, %lr
  %w3n = sub %w3, %u3
  %u4 = mul %g4, %lr
  %w4n = sub %w4, %u4
  return %l, %w1n, %w2n, %w3n, %w4n
}
