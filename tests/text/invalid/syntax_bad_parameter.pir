// test: error
// A parameter name needs its '%' (the error points at the name, on the second line).
func @main(%x: f32[4],
           y: f32[4]) -> (z: f32[4]) {
  %z = add %x, %x
  return %z
}
