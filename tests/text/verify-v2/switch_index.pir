// test: error
// A switch index is an integer scalar: not a float, not an array.
func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @main(%x: f32[4], %f: f32[], %v: i32[2]) -> (y: f32[4], z: f32[4]) {
  %y = switch %f, @b0(%x)
  %z = switch %v, @b0(%x)
  return %y, %z
}
