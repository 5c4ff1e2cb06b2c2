// test: error
// 'dims' is a list, even with one entry.
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = reduce %x {dims=1, kind=sum}
  return %y
}
