// test: spmd
// A func calling a spmd func (shard_map): the call stays a call, with its
// argument resharded to the callee's signature (split over data) by a local
// slice, and its replicated result needs nothing.
mesh [data=2]

spmd func @local_sum(%x: f32[4,3] on [data, _]) -> (f32[3] on [_]) {
  %s = reduce %x {dims=[0], kind=sum}
  %t = all_reduce %s {axes=[data], kind=sum}
  return %t
}

func @main(%x: f32[8,3]) -> (y: f32[3]) {
  %y = call @local_sum(%x)
  return %y
}
