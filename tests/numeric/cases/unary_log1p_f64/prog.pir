func @main(%x: f64[5,7],
           %s: f64[14]) -> (y: f64[5,7], ys: f64[14]) {
  %y = log1p %x : f64[5,7]
  %ys = log1p %s : f64[14]
  return %y, %ys
}
