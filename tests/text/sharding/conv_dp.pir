// test: sharded
// Data-parallel conv net: conv, relu, max pool, flatten, dense all keep the
// batch split; the kernel and dense weights stay replicated.
mesh [data=4]

func @main(%x: f32[8,16,16,3] on [data, _, _, _], %k: f32[3,3,3,8], %w: f32[512,10]) -> (y: f32[8,10]) {
  %c = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]} : f32[8,16,16,8]
  %z = constant 0.0 : f32[8,16,16,8]
  %r = max %c, %z
  %p = reduce_window %r {kind=max, window=[1,2,2,1], strides=[1,2,2,1]} : f32[8,8,8,8]
  %f = reshape %p : f32[8,512]
  %y = dot_general %f, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,10]
  return %y
}
