// test: error
// limit 10 is past the end of dimension 1 (size 8).
func @main(%x: f32[4,8]) -> (y: f32[2,6]) {
  %y = slice %x {start=[0,4], limit=[2,10]}
  return %y
}
