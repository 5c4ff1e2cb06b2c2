// test: error
// The mesh has no axis 'batch'.
mesh [data=4, model=2]

func @main(%x: f32[64,128] on [batch, _]) -> (y: f32[64,128]) {
  return %x
}
