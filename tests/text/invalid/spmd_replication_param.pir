// test: error
// %x differs between the data shards and 'y' is not split over data: not replicated.
mesh [data=4]

spmd func @main(%x: f32[16,8] on [data, _]) -> (y: f32[8]) {
  %y = reduce %x {dims=[0], kind=sum}
  return %y
}
