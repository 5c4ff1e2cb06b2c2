// test: error
// SSA: every value is defined once.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %x
  %y = mul %x, %x
  return %y
}
