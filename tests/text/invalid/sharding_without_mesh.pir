// test: error
// A module without a mesh has no axes to split over.
func @main(%x: f32[16,8] on [data, _]) -> (y: f32[16,8]) {
  return %x
}
