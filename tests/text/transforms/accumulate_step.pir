// test: pir --accumulate 4
// --accumulate 4: the grad becomes a scan over 4 micro-batches of the
// batch parameter %x (split over data), each row k, 4+k, ... of the batch
// (a reshape and a transpose, no data between devices), with @loss retyped
// for 4 rows (its mean's divisor stays 16: the micro-batches add up).
mesh [data=2]

func @loss(%w: f32[4], %x: f32[16,4] on [data, _]) -> (l: f32[]) {
  %wb = broadcast %w {dims=[1]} : f32[16,4]
  %p = mul %x, %wb
  %t = tanh %p
  %s = reduce %t {dims=[0,1], kind=sum} : f32[]
  %n = constant 16.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%w: f32[4], %x: f32[16,4] on [data, _]) -> (l: f32[], g: f32[4]) {
  %l, %g = grad @loss(%w, %x) {wrt=[0]} : (f32[], f32[4])
  return %l, %g
}
// CHECK: func @main(
// CHECK: %x.mb = reshape %x : f32[4,4,4]
// CHECK-NEXT: %x.mbs = transpose %x.mb {perm=[1,0,2]} : f32[4,4,4]
// CHECK: %l, %g, %w.c = scan @loss.accumulate(%l.zero, %g.zero, %w, %x.mbs) {length=4, carries=3} : (f32[], f32[4], f32[4])
// CHECK-NEXT: return %l, %g
// CHECK: func @loss.micro(%w: f32[4], %x: f32[4,4]) -> (l: f32[])
// CHECK: %n = constant 16.0 : f32[]
// CHECK: func @loss.accumulate(%l.sum: f32[], %g.sum: f32[4], %w: f32[4], %x: f32[4,4])
// CHECK: call @loss.micro.grad(%w, %x)
// CHECK: %l.next = add %l.sum,
// CHECK: %g.next = add %g.sum,
