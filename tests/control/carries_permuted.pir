// Carried results that are not a temporary of their own: the body returns
// its parameters in another order, a constant, and one value twice.
func @cond(%i: i32[], %a: f32[4], %b: f32[4], %c: f32[4], %d: f32[4]) -> (pred[]) {
  %n = constant 5 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %a: f32[4], %b: f32[4], %c: f32[4], %d: f32[4]) -> (i32[], f32[4], f32[4], f32[4], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %k = constant 0.5 : f32[4]
  %s = add %a, %k
  return %j, %b, %s, %k, %s
}

func @main(%a: f32[4], %b: f32[4], %c: f32[4], %d: f32[4]) -> (n: i32[], ra: f32[4], rb: f32[4], rc: f32[4], rd: f32[4]) {
  %zero = constant 0 : i32[]
  %n, %ra, %rb, %rc, %rd = while @cond, @body(%zero, %a, %b, %c, %d)
  return %n, %ra, %rb, %rc, %rd
}
