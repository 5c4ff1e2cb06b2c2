// test: error sharded
// The body's parameter and the loop's result annotate one carried value two
// ways: an error naming both.
mesh [data=2]

func @cond(%i: i32[], %x: f32[8,4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[8,4] on [data, _]) -> (i32[], f32[8,4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = tanh %x
  return %j, %y
}

func @main(%x: f32[8,4]) -> (n: i32[], y: f32[8,4]) {
  %zero = constant 0 : i32[]
  %i2, %x2 = while @cond, @body(%zero, %x) : (i32[], f32[8,4] on [_, data])
  return %i2, %x2
}
