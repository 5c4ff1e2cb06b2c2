// test: error
// all_gather over an axis the mesh does not have.
mesh [data=4, model=2]

spmd func @main(%x: f32[4,8] on [data, _]) -> (y: f32[16,8]) {
  %y = all_gather %x {axes=[batch], dim=0}
  return %y
}
