// test: error
// Every branch takes the switch's arguments and returns what branch 0 returns.
func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @b1(%x: f32[4]) -> (f32[4], f32[4]) {
  return %x, %x
}

func @b2(%x: f16[4]) -> (f32[4]) {
  %y = convert %x : f32[4]
  return %y
}

func @main(%i: i32[], %x: f32[4]) -> (y: f32[4], z: f32[4]) {
  %y = switch %i, @b0, @b1(%x)
  %z = switch %i, @b0, @b2(%x)
  return %y, %z
}
