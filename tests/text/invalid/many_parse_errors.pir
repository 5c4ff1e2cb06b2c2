// test: error
// Several independent syntax errors: each is reported, once.
func @main(%x: f32[4], %n: i32[4]) -> (y: f32[4]) {
  %a = add %x %x
  %b = mul %x, %q
  %c = frobnicate %x
  %d = constant 1.5 : i32[]
  %y = neg %x
  return %y
}

func @other(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x : f32[4
  return %y
}
