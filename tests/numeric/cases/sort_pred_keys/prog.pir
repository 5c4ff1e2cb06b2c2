func @main(%k: pred[2,7],
           %v: bf16[2,7],
           %w: i8[2,7]) -> (ak: pred[2,7], av: bf16[2,7], aw: i8[2,7], dk: pred[2,7], dv: bf16[2,7], dw: i8[2,7]) {
  %ak, %av, %aw = sort %k, %v, %w {dim=1} : (pred[2,7], bf16[2,7], i8[2,7])
  %dk, %dv, %dw = sort %k, %v, %w {dim=1, descending=true} : (pred[2,7], bf16[2,7], i8[2,7])
  return %ak, %av, %aw, %dk, %dv, %dw
}
