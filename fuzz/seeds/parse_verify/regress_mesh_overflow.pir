mesh [a=4294967296, b=4294967296]
spmd func @main(%x: f32[4] on [(a, b)]) -> (f32[4] on [(a, b)]) {
  return %x
}
