// test: error --entry train
// --entry names a function the module does not define.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
