// test: error
// exp is defined on floats only.
func @main(%x: i32[4]) -> (y: i32[4]) {
  %y = exp %x
  return %y
}
