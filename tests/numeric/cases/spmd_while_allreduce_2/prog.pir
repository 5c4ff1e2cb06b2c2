mesh [data=2]

// Grow every device's shard by the sum over data until the largest
// element anywhere passes 100: the condition's all_reduce makes the predicate
// the same on every device, the body's all_reduce needs every device's x.
spmd func @small(%i: i32[], %x: f32[2,3]) -> (pred[]) {
  %m = reduce %x {dims=[0, 1], kind=max}
  %g = all_reduce %m {axes=[data], kind=max}
  %lim = constant 100.0 : f32[]
  %p = compare %g, %lim {dir=lt}
  return %p
}

spmd func @grow(%i: i32[], %x: f32[2,3]) -> (i32[], f32[2,3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %s = all_reduce %x {axes=[data], kind=sum}
  %k = constant 0.5 : f32[2,3]
  %sk = mul %s, %k
  %y = add %x, %sk
  return %j, %y
}

spmd func @main(%x: f32[2,3] on [data, _]) -> (n: i32[], y: f32[2,3] on [data, _]) {
  %zero = constant 0 : i32[]
  %n, %y = while @small, @grow(%zero, %x)
  return %n, %y
}
