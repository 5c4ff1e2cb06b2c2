// test: error
// %x has rank 2: dimensions are 0 and 1.
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = reduce %x {dims=[2], kind=sum}
  return %y
}
