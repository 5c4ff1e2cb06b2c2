// test: error
// Inside a spmd func a body's parameters vary like what the statement passes them:
// @step's '%h on [data]' (and the carry it returns, 'out0') is the same on every
// device, and its result 'out1' says it is invariant, but it is this device's
// slice of %xs.
mesh [data=2]

spmd func @step(%h: f32[4] on [data], %x: f32[4]) -> (f32[4] on [data], f32[4] on [_]) {
  %y = add %x, %x
  return %h, %y
}

spmd func @main(%xs: f32[3,4] on [_, data]) -> (h: f32[4], ys: f32[3,4] on [_, data]) {
  %h0 = constant 0.0 : f32[4]
  %h, %ys = scan @step(%h0, %xs) {length=3, carries=1}
  return %h, %ys
}
