// test: error
// The step takes the carries then one slice of each scanned operand, and returns
// the carries first: @a's slice parameter keeps dimension 0; @b returns the carry
// with another type.
func @a(%h: f32[4], %x: f32[3,4]) -> (f32[4]) {
  return %h
}

func @b(%h: f32[4], %x: f32[4]) -> (f32[8], f32[4]) {
  %y = concat %h, %x {dim=0}
  return %y, %x
}

func @main(%h: f32[4], %xs: f32[3,4]) -> (h: f32[4], g: f32[4], ys: f32[3,4]) {
  %h2 = scan @a(%h, %xs) {length=3, carries=1}
  %g, %ys = scan @b(%h, %xs) {length=3, carries=1}
  return %h2, %g, %ys
}
