// A value of 2^64 bytes: Buffer::bytes multiplied elements by the dtype size unchecked.
func @main(%x: f32[4611686018427387904]) -> (y: f32[4611686018427387904]) {
  %y = neg %x
  return %y
}
