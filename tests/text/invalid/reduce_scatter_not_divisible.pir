// test: error
// reduce_scatter over data x model (8 devices): dimension 0 (size 12) is not divisible by 8.
mesh [data=4, model=2]

spmd func @main(%x: f32[12,8]) -> (y: f32[12,8]) {
  %y = reduce_scatter %x {axes=[data, model], dim=0, kind=sum}
  return %y
}
