// test: error
// clamp's bounds are scalars or have the operand's shape.
func @main(%lo: f32[2], %x: f32[4], %hi: f32[]) -> (y: f32[4]) {
  %y = clamp %lo, %x, %hi
  return %y
}
