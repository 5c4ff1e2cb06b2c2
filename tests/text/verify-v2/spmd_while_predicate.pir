// test: error
// In a spmd func every device must take the same path: the predicate sums this
// device's shard of %x, which differs along 'data' (all_reduce it over 'data' first).
mesh [data=2, model=2]

spmd func @cond(%i: i32[], %x: f32[4]) -> (pred[]) {
  %s = reduce %x {dims=[0], kind=sum}
  %z = constant 0.0 : f32[]
  %p = compare %s, %z {dir=lt}
  return %p
}

spmd func @body(%i: i32[], %x: f32[4]) -> (i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = add %x, %x
  return %j, %y
}

spmd func @main(%x: f32[4] on [data]) -> (n: i32[], y: f32[4] on [data]) {
  %zero = constant 0 : i32[]
  %n, %y = while @cond, @body(%zero, %x)
  return %n, %y
}
