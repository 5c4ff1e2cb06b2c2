// test: error
// Operands of an elementwise op have one dtype: convert first.
func @main(%a: f32[4], %b: f64[4]) -> (y: f32[4]) {
  %y = mul %a, %b
  return %y
}
