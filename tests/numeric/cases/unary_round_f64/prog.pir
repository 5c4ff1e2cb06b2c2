func @main(%x: f64[5,7],
           %s: f64[14]) -> (y: f64[5,7], ys: f64[14]) {
  %y = round %x : f64[5,7]
  %ys = round %s : f64[14]
  return %y, %ys
}
