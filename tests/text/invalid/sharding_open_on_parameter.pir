// test: error
// '?' (open) is only for values inside a body.
mesh [data=2]

func @main(%x: f32[4,8] on [data, ?]) -> (y: f32[4,8]) {
  return %x
}
