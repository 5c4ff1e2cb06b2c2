func @main(%x: f32[5,7],
           %s: f32[14]) -> (y: f32[5,7], ys: f32[14]) {
  %y = expm1 %x : f32[5,7]
  %ys = expm1 %s : f32[14]
  return %y, %ys
}
