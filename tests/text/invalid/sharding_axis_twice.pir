// test: error
// A mesh axis splits at most one dimension.
mesh [data=4, model=2]

func @main(%x: f32[64,128] on [data, data]) -> (y: f32[64,128]) {
  return %x
}
