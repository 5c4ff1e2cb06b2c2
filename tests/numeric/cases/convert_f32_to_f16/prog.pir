func @main(%x: f32[40]) -> (x_to_f16: f16[40]) {
  %x_to_f16 = convert %x : f16[40]
  return %x_to_f16
}
