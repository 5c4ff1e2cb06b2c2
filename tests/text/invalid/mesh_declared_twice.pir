// test: error
// Only one mesh per module.
mesh [data=2]
mesh [model=2]

func @main(%x: f32[4]) -> (y: f32[4]) {
  return %x
}
