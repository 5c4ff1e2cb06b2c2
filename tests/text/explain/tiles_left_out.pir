// test: explain
// More than 16 blocks along a dimension: the tile picture is left out (the
// table still gives every value's per-device shape).
mesh [data=32]

func @main(%x: f32[64] on [data]) -> (y: f32[64] on [data]) {
  %y = exp %x
  return %y
}
