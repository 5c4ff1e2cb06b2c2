// test: error
// A mesh axis name is used twice.
mesh [data=2, data=4]

func @main(%x: f32[4]) -> (y: f32[4]) {
  return %x
}
