// test: error pir
// A valid module (check accepts it) whose gradient the transform cannot build:
// select_and_scatter_add's transpose unrolls its window offsets, at most 1,024
// of them, and this window has 2,048. Reported at the grad, exit 1.
func @f(%s: f32[1,2], %x: f32[64,64]) -> (f32[]) {
  %z = select_and_scatter_add %s, %x {window=[64,32], strides=[64,32]} : f32[64,64]
  %t = reduce %z {dims=[0,1], kind=sum}
  return %t
}

func @main(%s: f32[1,2], %x: f32[64,64]) -> (y: f32[], g: f32[1,2]) {
  %y, %g = grad @f(%s, %x) {wrt=[0]}
  return %y, %g
}
