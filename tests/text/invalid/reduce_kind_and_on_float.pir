// test: error
// 'and'/'or' reductions are for integers and pred.
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = reduce %x {dims=[1], kind=and}
  return %y
}
