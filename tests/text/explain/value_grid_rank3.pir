// test: explain --value %h
// A rank-3 value: its first split dimension down, the other split ones
// across (dim 0 over data, dim 2 over model); the unsplit dim 1 is whole in
// every block.
mesh [data=2, model=2]

func @main(%x: f32[4,3,8] on [data, _, model]) -> (y: f32[4,3,8] on [data, _, model]) {
  %h = exp %x
  return %h
}
