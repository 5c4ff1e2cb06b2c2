// test: error
// start must not exceed limit.
func @main(%x: f32[8]) -> (y: f32[2]) {
  %y = slice %x {start=[6], limit=[4]}
  return %y
}
