func @main(%a: f16[5,7],
           %b: f16[5,7],
           %sa: f16[10,10],
           %sb: f16[10,10]) -> (r: f16[5,7], rs: f16[10,10]) {
  %r = div %a, %b : f16[5,7]
  %rs = div %sa, %sb : f16[10,10]
  return %r, %rs
}
