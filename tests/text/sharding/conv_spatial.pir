// test: sharded
// Spatially split convolution: the image height is split over data; the output
// height follows (a permutation factor: the partitioner exchanges halos), the
// kernel's window stays whole.
mesh [data=4]

func @main(%x: f32[2,32,32,4] on [_, data, _, _], %k: f32[3,3,4,4]) -> (y: f32[2,32,32,4]) {
  %y0 = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]} : f32[2,32,32,4]
  %y = tanh %y0
  return %y
}
