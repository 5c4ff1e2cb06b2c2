// test: sharded
// An annotation on the body's signature decides for the whole loop, even
// replicated: the initial value stays split (it is resharded once, on entry)
// while the body, the condition and the loop's result are replicated.
mesh [data=2]

func @cond(%i: i32[], %x: f32[8,4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[8,4] on [_, _]) -> (i32[], f32[8,4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = tanh %x
  return %j, %y
}

func @main(%x: f32[8,4] on [data, _]) -> (n: i32[], y: f32[8,4] on [data, _]) {
  %zero = constant 0 : i32[]
  %i2, %x2 = while @cond, @body(%zero, %x)
  return %i2, %x2
}
