// test: spmd
// A strided window along a split dimension is not a halo case: the dimension is
// gathered (with its reason) and the pool runs on whole rows.
// %y itself propagates as [data, _] while the result is replicated, so today
// the whole %y is sliced to its block and gathered again (a second, redundant
// all_gather): recorded here, to bless away when the partitioner keeps a value
// that is already whole.
mesh [data=2]

func @main(%x: f32[8,4] on [data, _]) -> (y: f32[4,4]) {
  %y = reduce_window %x {kind=sum, window=[2,1], strides=[2,1]}
  return %y
}
