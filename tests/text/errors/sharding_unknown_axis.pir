// test: error
// A sharding naming an axis the mesh does not have.
mesh [data=2]

func @main(%x: f32[4] on [model]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
