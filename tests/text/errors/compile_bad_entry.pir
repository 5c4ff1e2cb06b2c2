// test: error spmd --entry step
// --entry names a function the module does not have: an invalid program
// (exit 1), reported like check reports it, naming the functions there are.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
