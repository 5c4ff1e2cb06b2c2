// test: error
// 'while' names a condition and a body; here the body is missing, and the second
// statement names one function too many.
func @cond(%x: f32[4]) -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = while @cond(%x)
  %z = while @cond, @cond, @cond(%x)
  return %y
}
