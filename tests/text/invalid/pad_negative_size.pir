// test: error
// Negative padding may cut, but not below one element.
func @main(%x: f32[4], %v: f32[]) -> (y: f32[1]) {
  %y = pad %x, %v {low=[-3], high=[-2]}
  return %y
}
