// test: error
// A decimal point needs digits on both sides.
func @main() -> (y: f32[]) {
  %y = constant 1. : f32[]
  return %y
}
