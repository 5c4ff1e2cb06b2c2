// test: error
// The returned value's type differs from the declared result.
func @main(%x: f32[4]) -> (y: f32[4], s: f32[]) {
  %s = reduce %x {dims=[0], kind=sum}
  return %x, %x
}
