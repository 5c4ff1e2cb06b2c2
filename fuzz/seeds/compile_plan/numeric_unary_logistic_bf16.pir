func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = logistic %x : bf16[5,7]
  %ys = logistic %s : bf16[14]
  return %y, %ys
}
