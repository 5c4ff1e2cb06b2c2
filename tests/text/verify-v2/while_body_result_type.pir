// test: error
// The body must return the carried values' types: its result 1 is f32[8].
func @cond(%x: f32[4], %n: i32[]) -> (pred[]) {
  %z = constant 0 : i32[]
  %p = compare %n, %z {dir=gt}
  return %p
}

func @body(%x: f32[4], %n: i32[]) -> (f32[4], f32[8]) {
  %y = concat %x, %x {dim=0}
  return %x, %y
}

func @main(%x: f32[4], %n: i32[]) -> (y: f32[4], m: i32[]) {
  %y, %m = while @cond, @body(%x, %n)
  return %y, %m
}
