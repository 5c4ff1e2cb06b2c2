// test: error
// Result 'w' carries parameter %w, so it must have %w's sharding too.
mesh [data=2]

func @main(%w: f32[10,4] on [data, _], %g: f32[10,4]) -> (w: f32[10,4] on [_, data]) {
  %w2 = sub %w, %g
  return %w2
}
