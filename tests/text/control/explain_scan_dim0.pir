// test: explain
// Scanned operands and stacked results written split on dimension 0 at the
// entry signature: dimension 0 is never split inside the loop, so the
// operand is gathered once on entry and the stacked result sliced once on
// exit; the other dimensions follow the step's slices. Reverse order.
mesh [data=4]

func @step(%c: f32[4], %x: f32[4], %u: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %s = add %c, %x
  %m = mul %s, %u
  return %s, %m, %s
}

func @main(%c: f32[4] on [data], %xs: f32[8,4] on [data, _], %us: f32[8,4] on [_, data]) -> (c: f32[4] on [data], ys: f32[8,4] on [data, _], zs: f32[8,4]) {
  %c2, %ys, %zs = scan @step(%c, %xs, %us) {length=8, carries=1, reverse=true}
  return %c2, %ys, %zs
}
