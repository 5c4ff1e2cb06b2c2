// test: error
// add has one result, two are named.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y, %z = add %x, %x
  return %y
}
