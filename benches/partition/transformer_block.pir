// A pre-norm transformer block with Megatron sharding: batch over data; attention
// heads and the MLP hidden dimension over model.
mesh [data=2, model=2]

func @layer_norm(%x: f32[8,16,32]) -> (f32[8,16,32]) {
  %s = reduce %x {dims=[2], kind=sum} : f32[8,16]
  %n = constant 32.0 : f32[8,16]
  %mean = div %s, %n
  %mb = broadcast %mean {dims=[0,1]} : f32[8,16,32]
  %xc = sub %x, %mb
  %sq = mul %xc, %xc
  %vs = reduce %sq {dims=[2], kind=sum} : f32[8,16]
  %var = div %vs, %n
  %eps = constant 1e-05 : f32[8,16]
  %ve = add %var, %eps
  %inv = rsqrt %ve
  %ib = broadcast %inv {dims=[0,1]} : f32[8,16,32]
  %y = mul %xc, %ib
  return %y
}

func @main(%x: f32[8,16,32] on [data, _, _], %wq: f32[32,4,8] on [_, model, _], %wk: f32[32,4,8] on [_, model, _], %wv: f32[32,4,8] on [_, model, _], %wo: f32[4,8,32] on [model, _, _], %w1: f32[32,64] on [_, model], %w2: f32[64,32] on [model, _]) -> (out: f32[8,16,32] on [data, _, _]) {
  %xn = call @layer_norm(%x) : f32[8,16,32]
  %q = dot_general %xn, %wq {lhs_contract=[2], rhs_contract=[0]} : f32[8,16,4,8]
  %k = dot_general %xn, %wk {lhs_contract=[2], rhs_contract=[0]} : f32[8,16,4,8]
  %v = dot_general %xn, %wv {lhs_contract=[2], rhs_contract=[0]} : f32[8,16,4,8]
  %s = dot_general %q, %k {lhs_batch=[0,2], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[3]} : f32[8,4,16,16]
  %scale = constant 0.35355339 : f32[8,4,16,16]
  %ss = mul %s, %scale
  %m = reduce %ss {dims=[3], kind=max} : f32[8,4,16]
  %mb = broadcast %m {dims=[0,1,2]} : f32[8,4,16,16]
  %d = sub %ss, %mb
  %e = exp %d
  %z = reduce %e {dims=[3], kind=sum} : f32[8,4,16]
  %zb = broadcast %z {dims=[0,1,2]} : f32[8,4,16,16]
  %p = div %e, %zb
  %c = dot_general %p, %v {lhs_batch=[0,1], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[1]} : f32[8,4,16,8]
  %o = dot_general %c, %wo {lhs_contract=[1,3], rhs_contract=[0,1]} : f32[8,16,32]
  %h = add %x, %o
  %hn = call @layer_norm(%h) : f32[8,16,32]
  %u = dot_general %hn, %w1 {lhs_contract=[2], rhs_contract=[0]} : f32[8,16,64]
  %g = tanh %u
  %y = dot_general %g, %w2 {lhs_contract=[2], rhs_contract=[0]} : f32[8,16,32]
  %out = add %h, %y
  return %out
}
