func @main(%x: f16[3,50]) -> (sum1: f16[3], max1: f16[3], min0: f16[50]) {
  %sum1 = reduce %x {dims=[1], kind=sum} : f16[3]
  %max1 = reduce %x {dims=[1], kind=max} : f16[3]
  %min0 = reduce %x {dims=[0], kind=min} : f16[50]
  return %sum1, %max1, %min0
}
