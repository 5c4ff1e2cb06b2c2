func @main(%x: f16[5,7],
           %s: f16[14]) -> (y: f16[5,7], ys: f16[14]) {
  %y = log1p %x : f16[5,7]
  %ys = log1p %s : f16[14]
  return %y, %ys
}
