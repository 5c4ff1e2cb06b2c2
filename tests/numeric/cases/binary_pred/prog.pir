func @main(%a: pred[4],
           %b: pred[4]) -> (add: pred[4], max: pred[4], mul: pred[4], min: pred[4], and: pred[4], or: pred[4], xor: pred[4]) {
  %add = add %a, %b : pred[4]
  %max = max %a, %b : pred[4]
  %mul = mul %a, %b : pred[4]
  %min = min %a, %b : pred[4]
  %and = and %a, %b : pred[4]
  %or = or %a, %b : pred[4]
  %xor = xor %a, %b : pred[4]
  return %add, %max, %mul, %min, %and, %or, %xor
}
