// A while whose condition is false at once: the results are the initial
// values (resharded to the carried sharding on entry).
mesh [data=2]

func @never(%i: i32[], %x: f32[4,6]) -> (pred[]) {
  %n = constant 0 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[4,6] on [_, data]) -> (i32[], f32[4,6]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = exp %x
  return %j, %y
}

func @main(%x: f32[4,6] on [data, _]) -> (n: i32[], y: f32[4,6]) {
  %zero = constant 0 : i32[]
  %n, %y = while @never, @body(%zero, %x)
  return %n, %y
}
