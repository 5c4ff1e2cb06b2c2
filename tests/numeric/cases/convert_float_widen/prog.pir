func @main(%a: f16[12],
           %b: bf16[13],
           %c: f32[10]) -> (a_to_f32: f32[12], a_to_f64: f64[12], b_to_f32: f32[13], b_to_f64: f64[13], c_to_f64: f64[10]) {
  %a_to_f32 = convert %a : f32[12]
  %a_to_f64 = convert %a : f64[12]
  %b_to_f32 = convert %b : f32[13]
  %b_to_f64 = convert %b : f64[13]
  %c_to_f64 = convert %c : f64[10]
  return %a_to_f32, %a_to_f64, %b_to_f32, %b_to_f64, %c_to_f64
}
