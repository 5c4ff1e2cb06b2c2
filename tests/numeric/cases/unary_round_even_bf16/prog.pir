func @main(%x: bf16[5,7],
           %s: bf16[14]) -> (y: bf16[5,7], ys: bf16[14]) {
  %y = round_even %x : bf16[5,7]
  %ys = round_even %s : bf16[14]
  return %y, %ys
}
