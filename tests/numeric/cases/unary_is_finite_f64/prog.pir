func @main(%x: f64[5,7],
           %s: f64[14]) -> (y: pred[5,7], ys: pred[14]) {
  %y = is_finite %x : pred[5,7]
  %ys = is_finite %s : pred[14]
  return %y, %ys
}
