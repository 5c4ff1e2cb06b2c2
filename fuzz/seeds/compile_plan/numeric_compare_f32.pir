func @main(%a: f32[8,10],
           %b: f32[8,10]) -> (eq: pred[8,10], ne: pred[8,10], lt: pred[8,10], le: pred[8,10], gt: pred[8,10], ge: pred[8,10]) {
  %eq = compare %a, %b {dir=eq} : pred[8,10]
  %ne = compare %a, %b {dir=ne} : pred[8,10]
  %lt = compare %a, %b {dir=lt} : pred[8,10]
  %le = compare %a, %b {dir=le} : pred[8,10]
  %gt = compare %a, %b {dir=gt} : pred[8,10]
  %ge = compare %a, %b {dir=ge} : pred[8,10]
  return %eq, %ne, %lt, %le, %gt, %ge
}
