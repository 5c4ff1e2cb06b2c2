// test: error
// A scan's stacked output varies like the step's result for it: the step returns a
// slice of %xs, which is split over 'data', so 'ys' must be split over 'data' too
// (its carry 'h' is the same everywhere and may stay replicated).
mesh [data=2]

spmd func @step(%h: f32[], %x: f32[4]) -> (f32[], f32[4]) {
  return %h, %x
}

spmd func @main(%h: f32[], %xs: f32[3,4] on [_, data]) -> (h: f32[], ys: f32[3,4]) {
  %h2, %ys = scan @step(%h, %xs) {length=3, carries=1}
  return %h2, %ys
}
