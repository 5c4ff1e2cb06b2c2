// test: error
// The check follows values into bodies: @step's %x is one slice of %xs, which is
// split over 'data', so the inner while's predicate (computed from %x) differs
// along 'data'. The error is at the inner while, inside @step.
mesh [data=2]

spmd func @positive(%x: f32[]) -> (pred[]) {
  %z = constant 0.0 : f32[]
  %p = compare %x, %z {dir=gt}
  return %p
}

spmd func @halve(%x: f32[]) -> (f32[]) {
  %two = constant 2.0 : f32[]
  %y = div %x, %two
  return %y
}

spmd func @step(%h: f32[], %x: f32[]) -> (f32[], f32[]) {
  %y = while @positive, @halve(%x)
  return %h, %y
}

spmd func @main(%h: f32[], %xs: f32[2] on [data]) -> (h: f32[], ys: f32[2] on [data]) {
  %h2, %ys = scan @step(%h, %xs) {length=2, carries=1}
  return %h2, %ys
}
