// test: error
// Numbers have no leading '+'.
func @main() -> (y: f32[]) {
  %y = constant +1 : f32[]
  return %y
}
