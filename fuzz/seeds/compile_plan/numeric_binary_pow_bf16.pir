func @main(%a: bf16[5,7],
           %b: bf16[5,7],
           %sa: bf16[10,10],
           %sb: bf16[10,10]) -> (r: bf16[5,7], rs: bf16[10,10]) {
  %r = pow %a, %b : bf16[5,7]
  %rs = pow %sa, %sb : bf16[10,10]
  return %r, %rs
}
