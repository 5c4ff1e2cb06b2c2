// test: error
// A spmd func is written per device: no sharding constraints in its body.
mesh [data=4]

spmd func @main(%x: f32[16,8] on [data, _]) -> (y: f32[16,8] on [data, _]) {
  %y = neg %x : f32[16,8] on [data, _]
  return %y
}
