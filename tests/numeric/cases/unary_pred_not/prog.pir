func @main(%x: pred[5]) -> (y: pred[5]) {
  %y = not %x : pred[5]
  return %y
}
