func @main(%x: f64[10],
           %y: f64[9]) -> (x_to_f16: f16[10], y_to_bf16: bf16[9]) {
  %x_to_f16 = convert %x : f16[10]
  %y_to_bf16 = convert %y : bf16[9]
  return %x_to_f16, %y_to_bf16
}
