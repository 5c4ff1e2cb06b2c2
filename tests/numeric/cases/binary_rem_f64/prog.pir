func @main(%a: f64[5,7],
           %b: f64[5,7],
           %sa: f64[10,10],
           %sb: f64[10,10]) -> (r: f64[5,7], rs: f64[10,10]) {
  %r = rem %a, %b : f64[5,7]
  %rs = rem %sa, %sb : f64[10,10]
  return %r, %rs
}
