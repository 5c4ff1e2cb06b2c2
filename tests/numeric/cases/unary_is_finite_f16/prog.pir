func @main(%x: f16[5,7],
           %s: f16[14]) -> (y: pred[5,7], ys: pred[14]) {
  %y = is_finite %x : pred[5,7]
  %ys = is_finite %s : pred[14]
  return %y, %ys
}
