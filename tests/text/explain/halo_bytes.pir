// test: explain
// A "same" convolution over split rows: the collectives are the two halo
// permutes (one row each way), each sending one row's bytes.
mesh [data=2]

func @main(%x: f32[1,8,4,2] on [_, data, _, _], %k: f32[3,3,2,2]) -> (y: f32[1,8,4,2] on [_, data, _, _]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]}
  return %y
}
