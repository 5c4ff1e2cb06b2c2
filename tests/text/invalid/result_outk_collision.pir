// test: error
// The unnamed second result is called out1, which is also the first result's name.
func @main(%x: f32[4]) -> (out1: f32[4], f32[4]) {
  %a = neg %x
  return %a, %x
}
