// test: error pir
// An op without a gradient rule is reported at the grad, not a crash.
func @f(%x: f16[4]) -> (f32[]) {
  %b = bitcast_convert %x : bf16[4]
  %c = convert %b : f32[4]
  %s = reduce %c {dims=[0], kind=sum} : f32[]
  return %s
}

func @main(%x: f16[4]) -> (v: f32[], g: f16[4]) {
  %v, %g = grad @f(%x) {wrt=[0]} : (f32[], f16[4])
  return %v, %g
}
