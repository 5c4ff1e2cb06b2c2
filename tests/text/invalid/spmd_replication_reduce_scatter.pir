// test: error
// reduce_scatter leaves each device a different slice: 'y' must be split over data.
mesh [data=4]

spmd func @main(%x: f32[16,8]) -> (y: f32[4,8]) {
  %y = reduce_scatter %x {axes=[data], dim=0, kind=sum}
  return %y
}
