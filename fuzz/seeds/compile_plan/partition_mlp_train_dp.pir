// One SGD step of a 2-layer MLP with a hand-written backward pass, data parallel.
// Only the gradients (partial sums over the batch split) and the scalar loss
// need all-reduces.
mesh [data=4]

func @main(%x: f32[32,12] on [data, _], %y: f32[32,5] on [data, _], %w1: f32[12,16], %w2: f32[16,5]) -> (loss: f32[], w1: f32[12,16], w2: f32[16,5]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[32,16]
  %a = tanh %h
  %o = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[32,5]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %nb = constant 32.0 : f32[]
  %loss = div %s, %nb
  %k = constant 0.0625 : f32[32,5]
  %do = mul %d, %k
  %dw2 = dot_general %a, %do {lhs_contract=[0], rhs_contract=[0]} : f32[16,5]
  %da = dot_general %do, %w2 {lhs_contract=[1], rhs_contract=[1]} : f32[32,16]
  %a2 = mul %a, %a
  %one = constant 1.0 : f32[32,16]
  %g = sub %one, %a2
  %dh = mul %da, %g
  %dw1 = dot_general %x, %dh {lhs_contract=[0], rhs_contract=[0]} : f32[12,16]
  %lr1 = constant 0.1 : f32[12,16]
  %u1 = mul %dw1, %lr1
  %w1n = sub %w1, %u1
  %lr2 = constant 0.1 : f32[16,5]
  %u2 = mul %dw2, %lr2
  %w2n = sub %w2, %u2
  return %loss, %w1n, %w2n
}
