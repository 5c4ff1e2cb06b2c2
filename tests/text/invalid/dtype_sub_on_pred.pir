// test: error
// sub has no meaning on pred (use xor, and, or).
func @main(%a: pred[4], %b: pred[4]) -> (y: pred[4]) {
  %y = sub %a, %b
  return %y
}
