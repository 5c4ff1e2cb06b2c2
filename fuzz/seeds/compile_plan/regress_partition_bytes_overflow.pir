// The partitioner's collective cost estimate multiplied elements by bytes unchecked.
mesh [data=4]
func @main(%x: f32[4611686018427387904, 4] on [data, _]) -> (y: f32[4611686018427387904, 4]) {
  %y = neg %x
  return %y
}
