// test: error
// Indices are integers.
func @main(%table: f32[100,16], %idx: f32[8]) -> (y: f32[8,16]) {
  %y = gather %table, %idx {axis=0}
  return %y
}
