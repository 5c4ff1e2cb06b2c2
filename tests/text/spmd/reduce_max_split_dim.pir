// test: spmd
// A max over the split dimension: each device reduces its block, and an
// all_reduce of kind max (not sum) combines the partial maxima.
mesh [data=2]

func @main(%x: f32[6,10] on [_, data]) -> (m: f32[6]) {
  %m = reduce %x {dims=[1], kind=max}
  return %m
}
