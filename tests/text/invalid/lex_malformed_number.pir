// test: error
// A number running into letters.
func @main() -> (y: f32[]) {
  %y = constant 12abc : f32[]
  return %y
}
