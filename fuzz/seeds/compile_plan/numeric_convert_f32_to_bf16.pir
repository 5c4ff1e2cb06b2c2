func @main(%x: f32[36]) -> (x_to_bf16: bf16[36]) {
  %x_to_bf16 = convert %x : bf16[36]
  return %x_to_bf16
}
