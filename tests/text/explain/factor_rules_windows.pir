// test: explain
// Rules of the per-dimension and hand-written forms: the convolution's
// spatial dims and the pooled dim are permutation factors (halo exchange),
// its kernel window needs replication and its input feature is a reduction;
// reshape shares the common refinement of both shapes (here [4,4] -> [16]).
mesh [data=2]

func @main(%x: f32[2,8,8,4] on [_, data, _, _], %k: f32[3,3,4,4]) -> (y: f32[2,8,16]) {
  %c = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]}
  %p = reduce_window %c {kind=max, window=[1,1,2,1], strides=[1,1,2,1]}
  %y = reshape %p : f32[2,8,16]
  return %y
}
