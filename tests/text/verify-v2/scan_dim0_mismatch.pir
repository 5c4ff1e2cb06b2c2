// test: error
// A scanned operand's dimension 0 is the scan's length: %xs has 5 rows, length is 3;
// %s, a scalar, has no dimension 0 at all.
func @step(%h: f32[4], %x: f32[4]) -> (f32[4], f32[4]) {
  return %h, %x
}

func @step2(%h: f32[4], %x: f32[]) -> (f32[4]) {
  return %h
}

func @main(%h: f32[4], %xs: f32[5,4], %s: f32[]) -> (h: f32[4], ys: f32[3,4], g: f32[4]) {
  %h2, %ys = scan @step(%h, %xs) {length=3, carries=1}
  %g = scan @step2(%h, %s) {length=1, carries=1}
  return %h2, %ys, %g
}
