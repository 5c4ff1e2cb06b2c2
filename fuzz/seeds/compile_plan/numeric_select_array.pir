func @main(%p: pred[4,6],
           %x_f64: f64[4,6],
           %y_f64: f64[4,6],
           %x_f32: f32[4,6],
           %y_f32: f32[4,6],
           %x_f16: f16[4,6],
           %y_f16: f16[4,6],
           %x_bf16: bf16[4,6],
           %y_bf16: bf16[4,6],
           %x_i8: i8[4,6],
           %y_i8: i8[4,6],
           %x_u64: u64[4,6],
           %y_u64: u64[4,6],
           %x_i32: i32[4,6],
           %y_i32: i32[4,6],
           %x_pred: pred[4,6],
           %y_pred: pred[4,6]) -> (r_f64: f64[4,6], r_f32: f32[4,6], r_f16: f16[4,6], r_bf16: bf16[4,6], r_i8: i8[4,6], r_u64: u64[4,6], r_i32: i32[4,6], r_pred: pred[4,6]) {
  %r_f64 = select %p, %x_f64, %y_f64 : f64[4,6]
  %r_f32 = select %p, %x_f32, %y_f32 : f32[4,6]
  %r_f16 = select %p, %x_f16, %y_f16 : f16[4,6]
  %r_bf16 = select %p, %x_bf16, %y_bf16 : bf16[4,6]
  %r_i8 = select %p, %x_i8, %y_i8 : i8[4,6]
  %r_u64 = select %p, %x_u64, %y_u64 : u64[4,6]
  %r_i32 = select %p, %x_i32, %y_i32 : i32[4,6]
  %r_pred = select %p, %x_pred, %y_pred : pred[4,6]
  return %r_f64, %r_f32, %r_f16, %r_bf16, %r_i8, %r_u64, %r_i32, %r_pred
}
