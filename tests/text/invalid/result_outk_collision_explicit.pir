// test: error
// The first result is unnamed, so it is called out0; the second may not take that name.
func @main(%x: f32[4]) -> (f32[4], out0: f32[4]) {
  %a = neg %x
  return %a, %x
}
