// test: spmd
// Gradient accumulation written as a scan over 4 micro-batches (what
// optax.MultiSteps or a hand-written loop exports as). The partitioner puts
// each gradient's (and the mean loss's) sum over the split batch rows in the
// step as an all_reduce; the code motion moves all three after the loop, where
// they run once per step: the step adds up the local partial sums instead.
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
// CHECK: spmd func @main(
// CHECK-NOT: all_reduce
// CHECK: scan @micro(%z1, %z2, %zl, %w1, %w2, %xs, %ys)
// CHECK-NEXT: %g1.ar = all_reduce %g1 {axes=[data], kind=sum} : f32[16,64]  // after scan %g1, once per step, not per iteration (moved out of the step @micro
// CHECK-NEXT: %g2.ar = all_reduce %g2 {axes=[data], kind=sum} : f32[64,8]  // after scan %g1, once per step
// CHECK-NEXT: %l.ar = all_reduce %l {axes=[data], kind=sum} : f32[]  // after scan %g1, once per step
// CHECK: %loss = div %l.ar, %k
// CHECK: %u1 = mul %g1.ar, %lr1
// CHECK: spmd func @micro(
// CHECK-NOT: all_reduce
// CHECK: %a1 = add %acc1, %w1.ct : f32[16,64]
// CHECK-NEXT: %a2 = add %w2.ct, %acc2 : f32[64,8]
// CHECK-NEXT: %al = add %lacc, %l : f32[]
