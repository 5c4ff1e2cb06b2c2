// test: error
// constant needs its result type.
func @main() -> (y: f32[]) {
  %y = constant 1.0
  return %y
}
