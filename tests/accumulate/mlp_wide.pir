// A data-parallel MLP step whose activations (256 x 1024 per layer) outweigh
// its weights: --accumulate K keeps one micro-batch's activations live, so
// explain's peak memory falls with K (crates/pjc/tests/accumulate.rs).
mesh [data=4]

func @loss(%w1: f32[16,1024], %w2: f32[1024,8], %x: f32[256,16], %y: f32[256,8]) -> (l: f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[256,1024]
  %z = constant 0.0 : f32[256,1024]
  %r = max %h, %z
  %o = dot_general %r, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[256,8]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 2048.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%w1: f32[16,1024], %w2: f32[1024,8], %x: f32[256,16] on [data, _], %y: f32[256,8] on [data, _]) -> (loss: f32[], w1: f32[16,1024], w2: f32[1024,8]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x, %y) {wrt=[0,1]} : (f32[], f32[16,1024], f32[1024,8])
  %lr1 = constant 0.025 : f32[16,1024]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lr2 = constant 0.025 : f32[1024,8]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  return %l, %w1n, %w2n
}
