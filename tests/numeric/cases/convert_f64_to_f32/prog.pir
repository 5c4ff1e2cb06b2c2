func @main(%x: f64[26]) -> (x_to_f32: f32[26]) {
  %x_to_f32 = convert %x : f32[26]
  return %x_to_f32
}
