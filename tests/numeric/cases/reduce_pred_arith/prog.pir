func @main(%q: pred[3,3]) -> (sum1: pred[3], prod1: pred[3]) {
  %sum1 = reduce %q {dims=[1], kind=sum} : pred[3]
  %prod1 = reduce %q {dims=[1], kind=prod} : pred[3]
  return %sum1, %prod1
}
