// test: error
// One sharding entry per dimension: %x has rank 2.
mesh [data=4]

func @main(%x: f32[64,128] on [data]) -> (y: f32[64,128]) {
  return %x
}
