// test: error
// The mesh comes before every function.
func @main(%x: f32[4]) -> (y: f32[4]) {
  return %x
}

mesh [data=2]
