// test: error
// A switch needs at least one branch after its index; branches are separated by
// commas.
func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @main(%i: i32[], %x: f32[4]) -> (y: f32[4], z: f32[4]) {
  %y = switch %i(%x)
  %z = switch %i, @b0 @b0(%x)
  return %y, %z
}
