// test: error
// Every row of a nested literal has the same length.
func @main() -> (y: i32[2,2]) {
  %y = constant [[1,2],[3]] : i32[2,2]
  return %y
}
