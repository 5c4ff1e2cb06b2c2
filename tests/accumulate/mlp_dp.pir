// A data-parallel MLP training step (mean squared error over a batch of 32,
// split over data): the program `--accumulate K` turns into K micro-batches.
// Used by crates/pjc-transforms/tests/accumulate.rs (interpreter) and
// crates/pjc/tests/accumulate.rs (executables under mpirun).
mesh [data=4]

func @layer(%x: f32[32,16], %w1: f32[16,64], %b1: f32[64]) -> (h: f32[32,64]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[32,64]
  %bb = broadcast %b1 {dims=[1]} : f32[32,64]
  %hb = add %h, %bb
  %t = tanh %hb
  return %t
}

func @loss(%w1: f32[16,64], %b1: f32[64], %w2: f32[64,8], %x: f32[32,16], %y: f32[32,8]) -> (l: f32[]) {
  %t = call @layer(%x, %w1, %b1) : f32[32,64]
  %o = dot_general %t, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[32,8]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 256.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%w1: f32[16,64], %b1: f32[64], %w2: f32[64,8], %x: f32[32,16] on [data, _], %y: f32[32,8] on [data, _]) -> (loss: f32[], w1: f32[16,64], b1: f32[64], w2: f32[64,8]) {
  %l, %g1, %gb, %g2 = grad @loss(%w1, %b1, %w2, %x, %y) {wrt=[0,1,2]} : (f32[], f32[16,64], f32[64], f32[64,8])
  %lr1 = constant 0.05 : f32[16,64]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lrb = constant 0.05 : f32[64]
  %ub = mul %gb, %lrb
  %b1n = sub %b1, %ub
  %lr2 = constant 0.05 : f32[64,8]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  return %l, %w1n, %b1n, %w2n
}
