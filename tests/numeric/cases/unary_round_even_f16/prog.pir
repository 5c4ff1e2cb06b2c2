func @main(%x: f16[5,7],
           %s: f16[14]) -> (y: f16[5,7], ys: f16[14]) {
  %y = round_even %x : f16[5,7]
  %ys = round_even %s : f16[14]
  return %y, %ys
}
