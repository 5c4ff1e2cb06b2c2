func @main(%p: pred[5]) -> (p_to_f64: f64[5], p_to_f32: f32[5], p_to_f16: f16[5], p_to_bf16: bf16[5], p_to_i64: i64[5], p_to_i32: i32[5], p_to_i8: i8[5], p_to_u64: u64[5], p_to_u8: u8[5]) {
  %p_to_f64 = convert %p : f64[5]
  %p_to_f32 = convert %p : f32[5]
  %p_to_f16 = convert %p : f16[5]
  %p_to_bf16 = convert %p : bf16[5]
  %p_to_i64 = convert %p : i64[5]
  %p_to_i32 = convert %p : i32[5]
  %p_to_i8 = convert %p : i8[5]
  %p_to_u64 = convert %p : u64[5]
  %p_to_u8 = convert %p : u8[5]
  return %p_to_f64, %p_to_f32, %p_to_f16, %p_to_bf16, %p_to_i64, %p_to_i32, %p_to_i8, %p_to_u64, %p_to_u8
}
