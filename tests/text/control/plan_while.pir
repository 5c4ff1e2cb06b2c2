// test: plan
// A while loop in the plan: its condition and body are blocks of their own,
// planned once; the body's results are temporaries swapped with the carried
// state each iteration (nothing is allocated or copied per iteration).
// result; the counter stays replicated.
mesh [data=2]

func @cond(%i: i32[], %x: f32[8,4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[8,4]) -> (i32[], f32[8,4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = tanh %x
  return %j, %y
}

func @main(%x: f32[8,4] on [data, _]) -> (n: i32[], y: f32[8,4]) {
  %zero = constant 0 : i32[]
  %i2, %x2 = while @cond, @body(%zero, %x)
  return %i2, %x2
}
