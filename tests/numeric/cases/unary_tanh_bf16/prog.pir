func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = tanh %x : bf16[5,7]
  %ys = tanh %s : bf16[14]
  return %y, %ys
}
