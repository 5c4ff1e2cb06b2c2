// test: error
// A 2x3 literal for a 3x2 type.
func @main() -> (y: f32[3,2]) {
  %y = constant [[1,2,3],[4,5,6]] : f32[3,2]
  return %y
}
