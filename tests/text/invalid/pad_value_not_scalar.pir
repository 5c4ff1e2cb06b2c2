// test: error
// The padding value is a scalar of the operand's dtype.
func @main(%x: f32[4], %v: f32[1]) -> (y: f32[6]) {
  %y = pad %x, %v {low=[1], high=[1]}
  return %y
}
