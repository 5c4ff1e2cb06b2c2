// test: spmd
// A 3-wide "same" max pool along a split dimension: halos of one element each
// way (padded with -inf at the ends, the identity of max).
mesh [data=4]

func @main(%x: f32[16,5] on [data, _]) -> (y: f32[16,5] on [data, _]) {
  %y = reduce_window %x {kind=max, window=[3,1], padding=[[1,1],[0,0]]}
  return %y
}
