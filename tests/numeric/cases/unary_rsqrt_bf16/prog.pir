func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = rsqrt %x : bf16[5,7]
  %ys = rsqrt %s : bf16[14]
  return %y, %ys
}
