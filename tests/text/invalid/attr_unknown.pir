// test: error
// reduce has no 'keepdims' attribute.
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = reduce %x {dims=[1], kind=sum, keepdims=true}
  return %y
}
