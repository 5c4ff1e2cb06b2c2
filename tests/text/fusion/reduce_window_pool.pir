// test: plan
// A max pool after a relu: the window reduction is the root of a reduction
// kernel over its 2x2 window, but the relu is not fused into it: a window may
// read an element several times, so its expensive producers are stored first
// (here the stride equals the window and each element is read once, so this
// costs one extra pass over %r).
func @main(%x: f32[1,8,8,2]) -> (y: f32[1,4,4,2]) {
  %z = constant 0.0 : f32[1,8,8,2]
  %r = max %x, %z
  %y = reduce_window %r {kind=max, window=[1,2,2,1], strides=[1,2,2,1]}
  return %y
}
