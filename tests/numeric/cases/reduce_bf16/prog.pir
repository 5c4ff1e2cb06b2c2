func @main(%x: bf16[5,40],
           %w: bf16[5,6]) -> (sum1: bf16[5], max0: bf16[40], min1: bf16[5], prod0: bf16[6]) {
  %sum1 = reduce %x {dims=[1], kind=sum} : bf16[5]
  %max0 = reduce %x {dims=[0], kind=max} : bf16[40]
  %min1 = reduce %x {dims=[1], kind=min} : bf16[5]
  %prod0 = reduce %w {dims=[0], kind=prod} : bf16[6]
  return %sum1, %max0, %min1, %prod0
}
