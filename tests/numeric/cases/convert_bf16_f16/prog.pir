func @main(%a: bf16[15],
           %b: f16[11]) -> (a_to_f16: f16[15], b_to_bf16: bf16[11]) {
  %a_to_f16 = convert %a : f16[15]
  %b_to_bf16 = convert %b : bf16[11]
  return %a_to_f16, %b_to_bf16
}
