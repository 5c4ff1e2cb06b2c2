// test: error
// 'while' needs at least one carried value (bodies see only their parameters).
func @cond() -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

func @body() -> () {
  return
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %r = while @cond, @body()
  return %x
}
