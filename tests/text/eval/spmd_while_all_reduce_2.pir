// test: eval
// A while in a spmd func on 2 devices whose body all_reduces: every device
// runs the body in lockstep, and the predicate (from an all_reduce max) is the
// same on all of them. Each trip adds the sum over the devices' shards to each
// shard, until some element passes 50.
mesh [data=2]

spmd func @small(%i: i32[], %x: f32[2]) -> (pred[]) {
  %m = reduce %x {dims=[0], kind=max}
  %g = all_reduce %m {axes=[data], kind=max}
  %lim = constant 50.0 : f32[]
  %p = compare %g, %lim {dir=lt}
  return %p
}

spmd func @grow(%i: i32[], %x: f32[2]) -> (i32[], f32[2]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %s = all_reduce %x {axes=[data], kind=sum}
  %y = add %x, %s
  return %j, %y
}

spmd func @main() -> (trips: i32[], x: f32[2] on [data]) {
  %zero = constant 0 : i32[]
  %d = axis_index {axis=data} : i32[]
  %df = convert %d : f32[]
  %x0 = iota {dim=0} : f32[2]
  %db = broadcast %df : f32[2]
  %x1 = add %x0, %db
  %trips, %x = while @small, @grow(%zero, %x1)
  return %trips, %x
}
