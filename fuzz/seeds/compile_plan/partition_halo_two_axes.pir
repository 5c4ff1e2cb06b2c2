// Rows split over two axes (8 blocks): halos travel between consecutive blocks
// in (data, model) order, and the outer blocks use the padding.
mesh [data=2, model=4]

func @main(%x: f32[1,32,6,2] on [_, (data, model), _, _], %k: f32[3,3,2,2]) -> (y: f32[1,32,6,2] on [_, (data, model), _, _]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]} : f32[1,32,6,2]
  return %y
}
