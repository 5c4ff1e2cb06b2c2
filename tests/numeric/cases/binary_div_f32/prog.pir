func @main(%a: f32[5,7],
           %b: f32[5,7],
           %sa: f32[10,10],
           %sb: f32[10,10]) -> (r: f32[5,7], rs: f32[10,10]) {
  %r = div %a, %b : f32[5,7]
  %rs = div %sa, %sb : f32[10,10]
  return %r, %rs
}
