// test: fmt
// A func may call a spmd func (shard_map): the call site uses global types.
mesh [data=4]

spmd func @local_sum(%x: f32[4,8] on [data, _]) -> (s: f32[8]) {
  %p = reduce %x {dims=[0], kind=sum}
  %s = all_reduce %p {axes=[data], kind=sum}
  return %s
}

func @main(%x: f32[16,8]) -> (s: f32[8]) {
  %s = call @local_sum(%x) : f32[8]
  return %s
}
