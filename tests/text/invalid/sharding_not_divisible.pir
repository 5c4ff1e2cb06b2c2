// test: error
// 30 rows cannot be split evenly over 4 devices.
mesh [data=4, model=2]

func @main(%x: f32[30,128] on [data, _]) -> (y: f32[30,128]) {
  return %x
}
