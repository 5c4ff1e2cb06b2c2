// test: error
// A body must not refer to itself: @body's own while names @body again.
func @cond(%x: f32[4]) -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

func @body(%x: f32[4]) -> (f32[4]) {
  %y = while @cond, @body(%x)
  return %y
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = while @cond, @body(%x)
  return %y
}
