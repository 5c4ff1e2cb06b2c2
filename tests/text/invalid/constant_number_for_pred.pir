// test: error
// A pred literal is true or false, not 1.
func @main() -> (y: pred[]) {
  %y = constant 1 : pred[]
  return %y
}
