// test: error
// The body takes one parameter, but 'while' carries two values.
func @cond(%i: i32[], %x: f32[4]) -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

func @body(%i: i32[]) -> (i32[]) {
  return %i
}

func @main(%x: f32[4]) -> (i: i32[], y: f32[4]) {
  %zero = constant 0 : i32[]
  %i, %y = while @cond, @body(%zero, %x)
  return %i, %y
}
