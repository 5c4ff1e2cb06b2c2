func @main(%x: f16[5,7],
           %s: f16[14]) -> (y: f16[5,7], ys: f16[14]) {
  %y = erf %x : f16[5,7]
  %ys = erf %s : f16[14]
  return %y, %ys
}
