// One SGD step of a small Elman RNN written with scan (PIR version 2), the way
// jax.lax.scan writes it: the cell is the step function, the sequence is scanned
// along dimension 0, and the weights ride along as carries the cell returns
// unchanged (a body sees only its parameters). grad differentiates through the
// scan; the updated weights are results named like the parameters (state carry).

// h' = tanh(x W + h U + b); the output of the step is h' itself.
func @cell(%h: f32[8,32], %w: f32[16,32], %u: f32[32,32], %b: f32[32], %x: f32[8,16])
    -> (f32[8,32], f32[16,32], f32[32,32], f32[32], f32[8,32]) {
  %xw = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,32]
  %hu = dot_general %h, %u {lhs_contract=[1], rhs_contract=[0]} : f32[8,32]
  %bb = broadcast %b {dims=[1]} : f32[8,32]
  %s = add %xw, %hu
  %z = add %s, %bb
  %h2 = tanh %z
  return %h2, %w, %u, %b, %h2
}

// Mean squared error of every step's hidden state against the targets.
func @loss(%w: f32[16,32], %u: f32[32,32], %b: f32[32], %xs: f32[12,8,16], %ys: f32[12,8,32]) -> (f32[]) {
  %h0 = constant 0.0 : f32[8,32]
  %h, %w2, %u2, %b2, %hs = scan @cell(%h0, %w, %u, %b, %xs) {length=12, carries=4}
  %d = sub %hs, %ys
  %sq = mul %d, %d
  %total = reduce %sq {dims=[0,1,2], kind=sum} : f32[]
  %n = constant 3072.0 : f32[]
  %mse = div %total, %n
  return %mse
}

func @main(%w: f32[16,32], %u: f32[32,32], %b: f32[32], %xs: f32[12,8,16], %ys: f32[12,8,32])
    -> (loss: f32[], w: f32[16,32], u: f32[32,32], b: f32[32]) {
  %l, %gw, %gu, %gb = grad @loss(%w, %u, %b, %xs, %ys) {wrt=[0,1,2]}
  %lr = constant 0.1 : f32[]
  %lrw = broadcast %lr : f32[16,32]
  %lru = broadcast %lr : f32[32,32]
  %lrb = broadcast %lr : f32[32]
  %sw = mul %gw, %lrw
  %su = mul %gu, %lru
  %sb = mul %gb, %lrb
  %w2 = sub %w, %sw
  %u2 = sub %u, %su
  %b2 = sub %b, %sb
  return %l, %w2, %u2, %b2
}
