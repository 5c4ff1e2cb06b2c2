func @main(%a: pred[4],
           %b: pred[4]) -> (eq: pred[4], ne: pred[4], lt: pred[4], le: pred[4], gt: pred[4], ge: pred[4]) {
  %eq = compare %a, %b {dir=eq} : pred[4]
  %ne = compare %a, %b {dir=ne} : pred[4]
  %lt = compare %a, %b {dir=lt} : pred[4]
  %le = compare %a, %b {dir=le} : pred[4]
  %gt = compare %a, %b {dir=gt} : pred[4]
  %ge = compare %a, %b {dir=ge} : pred[4]
  return %eq, %ne, %lt, %le, %gt, %ge
}
