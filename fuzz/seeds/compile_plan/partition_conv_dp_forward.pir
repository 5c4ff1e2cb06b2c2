// Data-parallel conv net forward with the logits kept split: no communication.
mesh [data=4]

func @main(%x: f32[8,12,12,3] on [data, _, _, _], %k: f32[3,3,3,4], %w: f32[144,10]) -> (y: f32[8,10] on [data, _]) {
  %c = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1,1],[1,1]]} : f32[8,12,12,4]
  %z = constant 0.0 : f32[8,12,12,4]
  %r = max %c, %z
  %p = reduce_window %r {kind=max, window=[1,2,2,1], strides=[1,2,2,1]} : f32[8,6,6,4]
  %f = reshape %p : f32[8,144]
  %y = dot_general %f, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,10]
  return %y
}
