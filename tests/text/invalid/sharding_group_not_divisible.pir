// test: error
// The result's dimension 1 (size 12) is split over data x model = 8 devices.
mesh [data=4, model=2]

func @main(%x: f32[8,12]) -> (y: f32[8,12] on [_, (data, model)]) {
  return %x
}
