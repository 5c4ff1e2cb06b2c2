// test: plan
// The same accumulation scan planned: the three all-reduces moved after the
// loop share one message (the combiner), so a step runs one collective, not
// one per micro-batch and gradient.
mesh [data=4]

func @loss(%w1: f32[16,64], %w2: f32[64,8], %x: f32[32,16], %y: f32[32,8]) -> (l: f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[32,64]
  %t = tanh %h
  %o = dot_general %t, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[32,8]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 256.0 : f32[]
  %l = div %s, %n
  return %l
}

func @micro(%acc1: f32[16,64], %acc2: f32[64,8], %lacc: f32[], %w1: f32[16,64], %w2: f32[64,8], %x: f32[32,16], %y: f32[32,8]) -> (f32[16,64], f32[64,8], f32[], f32[16,64], f32[64,8]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x, %y) {wrt=[0,1]} : (f32[], f32[16,64], f32[64,8])
  %a1 = add %acc1, %g1
  %a2 = add %g2, %acc2
  %al = add %lacc, %l
  return %a1, %a2, %al, %w1, %w2
}

func @main(%w1: f32[16,64], %w2: f32[64,8], %xs: f32[4,32,16] on [_, data, _], %ys: f32[4,32,8] on [_, data, _]) -> (loss: f32[], w1: f32[16,64], w2: f32[64,8]) {
  %z1 = constant 0.0 : f32[16,64]
  %z2 = constant 0.0 : f32[64,8]
  %zl = constant 0.0 : f32[]
  %g1, %g2, %l, %w1c, %w2c = scan @micro(%z1, %z2, %zl, %w1, %w2, %xs, %ys) {length=4, carries=5} : (f32[16,64], f32[64,8], f32[], f32[16,64], f32[64,8])
  %k = constant 4.0 : f32[]
  %loss = div %l, %k
  %lr1 = constant 0.025 : f32[16,64]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lr2 = constant 0.025 : f32[64,8]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  return %loss, %w1n, %w2n
}
// CHECK-NOT: collective
// CHECK: scan {length=4}
// CHECK-NOT: collective
// CHECK: kernel k4_combined [1537]
// CHECK-NEXT: collective all_reduce {axes=[data], kind=sum}
// CHECK-NOT: collective
