// test: plan
// A convolution is a library call; the tanh after it is a kernel.
func @main(%x: f32[2,6,6,3], %k: f32[3,3,3,4]) -> (y: f32[2,6,6,4]) {
  %c = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]}
  %y = tanh %c
  return %y
}
