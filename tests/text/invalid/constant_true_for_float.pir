// test: error
// true/false are pred literals.
func @main() -> (y: f32[]) {
  %y = constant true : f32[]
  return %y
}
