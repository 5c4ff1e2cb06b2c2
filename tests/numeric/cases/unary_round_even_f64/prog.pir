func @main(%x: f64[5,7],
           %s: f64[14]) -> (y: f64[5,7], ys: f64[14]) {
  %y = round_even %x : f64[5,7]
  %ys = round_even %s : f64[14]
  return %y, %ys
}
