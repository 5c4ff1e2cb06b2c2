// test: error
// The written result type differs from the inferred one (reduce removes dim 1).
func @main(%x: f32[4,8]) -> (y: f32[4,1]) {
  %y = reduce %x {dims=[1], kind=sum} : f32[4,1]
  return %y
}
