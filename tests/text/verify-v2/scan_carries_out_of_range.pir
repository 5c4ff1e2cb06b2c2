// test: error
// 'carries' counts the operands that are carries: there are only two operands.
func @step(%h: f32[4], %x: f32[4]) -> (f32[4], f32[4]) {
  return %h, %x
}

func @main(%h: f32[4], %xs: f32[3,4]) -> (h: f32[4], ys: f32[3,4]) {
  %h2, %ys = scan @step(%h, %xs) {length=3, carries=3}
  return %h2, %ys
}
