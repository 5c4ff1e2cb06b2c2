func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = ceil %x : bf16[5,7]
  %ys = ceil %s : bf16[14]
  return %y, %ys
}
