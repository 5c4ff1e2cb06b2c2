// test: error eval
// eval of a function with a parameter but no --input for it: exit 2, naming
// the parameter and how to give it.
func @main(%x: f32[2]) -> (y: f32[2]) {
  %y = neg %x
  return %y
}
