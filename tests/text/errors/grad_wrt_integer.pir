// test: error
// grad with respect to an integer parameter: rejected when the module is
// verified (before any transform runs).
func @f(%x: f32[], %n: i32[]) -> (f32[]) {
  %c = convert %n : f32[]
  %y = mul %x, %c
  return %y
}

func @main(%x: f32[], %n: i32[]) -> (y: f32[], g: i32[]) {
  %y, %g = grad @f(%x, %n) {wrt=[1]}
  return %y, %g
}
