func @main(%a: i64[23],
           %b: u64[10],
           %c: i32[14],
           %d: u16[10],
           %e: i8[8],
           %f: u8[6]) -> (a_to_f64: f64[23], a_to_f32: f32[23], a_to_f16: f16[23], a_to_bf16: bf16[23], b_to_f64: f64[10], b_to_f32: f32[10], b_to_bf16: bf16[10], c_to_f64: f64[14], c_to_f32: f32[14], c_to_f16: f16[14], c_to_bf16: bf16[14], d_to_f16: f16[10], d_to_bf16: bf16[10], d_to_f32: f32[10], e_to_bf16: bf16[8], e_to_f16: f16[8], e_to_f32: f32[8], f_to_f16: f16[6], f_to_f64: f64[6]) {
  %a_to_f64 = convert %a : f64[23]
  %a_to_f32 = convert %a : f32[23]
  %a_to_f16 = convert %a : f16[23]
  %a_to_bf16 = convert %a : bf16[23]
  %b_to_f64 = convert %b : f64[10]
  %b_to_f32 = convert %b : f32[10]
  %b_to_bf16 = convert %b : bf16[10]
  %c_to_f64 = convert %c : f64[14]
  %c_to_f32 = convert %c : f32[14]
  %c_to_f16 = convert %c : f16[14]
  %c_to_bf16 = convert %c : bf16[14]
  %d_to_f16 = convert %d : f16[10]
  %d_to_bf16 = convert %d : bf16[10]
  %d_to_f32 = convert %d : f32[10]
  %e_to_bf16 = convert %e : bf16[8]
  %e_to_f16 = convert %e : f16[8]
  %e_to_f32 = convert %e : f32[8]
  %f_to_f16 = convert %f : f16[6]
  %f_to_f64 = convert %f : f64[6]
  return %a_to_f64, %a_to_f32, %a_to_f16, %a_to_bf16, %b_to_f64, %b_to_f32, %b_to_bf16, %c_to_f64, %c_to_f32, %c_to_f16, %c_to_bf16, %d_to_f16, %d_to_bf16, %d_to_f32, %e_to_bf16, %e_to_f16, %e_to_f32, %f_to_f16, %f_to_f64
}
