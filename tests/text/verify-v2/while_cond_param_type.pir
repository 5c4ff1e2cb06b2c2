// test: error
// The condition must take the carried values: its parameter 1 has the wrong shape.
func @cond(%i: i32[], %x: f32[8]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[4]) -> (i32[], f32[4]) {
  return %i, %x
}

func @main(%x: f32[4]) -> (i: i32[], y: f32[4]) {
  %zero = constant 0 : i32[]
  %i, %y = while @cond, @body(%zero, %x)
  return %i, %y
}
