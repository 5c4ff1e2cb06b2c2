func @main(%a: f32[8],
           %b: f64[6],
           %c: bf16[5],
           %d: f16[5],
           %e: i32[6],
           %f: u8[4],
           %g: u64[3]) -> (a_to_pred: pred[8], b_to_pred: pred[6], c_to_pred: pred[5], d_to_pred: pred[5], e_to_pred: pred[6], f_to_pred: pred[4], g_to_pred: pred[3]) {
  %a_to_pred = convert %a : pred[8]
  %b_to_pred = convert %b : pred[6]
  %c_to_pred = convert %c : pred[5]
  %d_to_pred = convert %d : pred[5]
  %e_to_pred = convert %e : pred[6]
  %f_to_pred = convert %f : pred[4]
  %g_to_pred = convert %g : pred[3]
  return %a_to_pred, %b_to_pred, %c_to_pred, %d_to_pred, %e_to_pred, %f_to_pred, %g_to_pred
}
