func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = erf %x : bf16[5,7]
  %ys = erf %s : bf16[14]
  return %y, %ys
}
