func @main(%x: f64[7],
           %lo: f64[],
           %hi: f64[],
           %xb: bf16[7],
           %lob: bf16[],
           %hib: bf16[]) -> (y: f64[7], yb: bf16[7]) {
  %y = clamp %lo, %x, %hi : f64[7]
  %yb = clamp %lob, %xb, %hib : bf16[7]
  return %y, %yb
}
