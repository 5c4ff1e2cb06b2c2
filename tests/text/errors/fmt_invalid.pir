// test: error fmt
// fmt of an invalid module prints nothing and reports exactly what check
// reports (exit 1).
func @main(%x: f32[4], %y: f32[3]) -> (z: f32[4]) {
  %z = add %x, %y
  return %z
}
