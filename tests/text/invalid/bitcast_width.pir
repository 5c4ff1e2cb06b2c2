// test: error
// bitcast_convert keeps the bit width: f32 is 32 bits, i16 is 16.
func @main(%x: f32[4]) -> (y: i16[4]) {
  %y = bitcast_convert %x : i16[4]
  return %y
}
