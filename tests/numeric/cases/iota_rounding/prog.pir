func @main() -> (a: bf16[300], b: f16[2100], c: bf16[2,260]) {
  %a = iota {dim=0} : bf16[300]
  %b = iota {dim=0} : f16[2100]
  %c = iota {dim=1} : bf16[2,260]
  return %a, %b, %c
}
