// Data-parallel fixed-point iteration with while (PIR version 2) in a spmd func:
// each of the 4 devices holds a quarter of x and halves its shard until the
// global squared norm, an all_reduce over 'data', drops below a tolerance or 50
// iterations have run. The predicate is computed from all_reduce'd and
// replicated values only, so every device takes the same number of iterations:
// pjc's replication check proves it (a predicate from the local shard alone is
// an error naming the axis).
mesh [data=4]

spmd func @not_done(%k: i32[], %x: f32[64]) -> (pred[]) {
  %sq = mul %x, %x
  %local = reduce %sq {dims=[0], kind=sum} : f32[]
  %norm2 = all_reduce %local {axes=[data], kind=sum}
  %tol = constant 1e-06 : f32[]
  %big = compare %norm2, %tol {dir=gt}
  %limit = constant 50 : i32[]
  %more = compare %k, %limit {dir=lt}
  %p = and %big, %more
  return %p
}

spmd func @halve(%k: i32[], %x: f32[64]) -> (i32[], f32[64]) {
  %one = constant 1 : i32[]
  %k2 = add %k, %one
  %half = constant 0.5 : f32[64]
  %x2 = mul %x, %half
  return %k2, %x2
}

spmd func @main(%x: f32[64] on [data]) -> (iterations: i32[], x: f32[64] on [data]) {
  %zero = constant 0 : i32[]
  %k, %y = while @not_done, @halve(%zero, %x)
  return %k, %y
}
