// test: fmt
// Unnamed results are called out0, out1, ...; an explicit name may be out2 if no
// unnamed result is at position 2.
func @main(%x: f32[4]) -> (f32[4], f32[], out2: f32[4]) {
  %n = neg %x
  %s = reduce %x {dims=[0], kind=sum}
  return %n, %s, %x
}
