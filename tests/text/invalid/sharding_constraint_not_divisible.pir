// test: error
// A sharding constraint inside the body must divide too.
mesh [data=4]

func @main(%x: f32[6,8]) -> (y: f32[6,8]) {
  %y = neg %x : f32[6,8] on [data, ?]
  return %y
}
