// test: error
// A float literal cannot give an integer value.
func @main() -> (y: i32[]) {
  %y = constant 1.5 : i32[]
  return %y
}
