func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = sin %x : bf16[5,7]
  %ys = sin %s : bf16[14]
  return %y, %ys
}
