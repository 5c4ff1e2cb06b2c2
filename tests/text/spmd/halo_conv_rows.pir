// test: spmd
// Image rows split over data: a 3x3 "same" convolution needs one row from each
// neighbour; two collective_permutes fetch them (the devices at the ends use
// the zero padding), and the convolution runs unpadded on that dimension.
mesh [data=2]

func @main(%x: f32[1,8,4,2] on [_, data, _, _], %k: f32[3,3,2,3]) -> (y: f32[1,8,4,3] on [_, data, _, _]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]}
  return %y
}
