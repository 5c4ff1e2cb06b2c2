// test: mlir
// A spmd func's collectives as shard ops: all_reduce (reduction = max),
// all_gather (gather_axis), reduce_scatter, all_to_all, collective_permute as
// shard.shift with rotate, axis_index as shard.process_multi_index.
mesh [x=2, y=2]

spmd func @main(%a: f32[4,8] on [x, y]) -> (r: f32[4,8] on [x, y], g: f32[4,16] on [x, _], s: f32[2,8] on [(x, y), _], t: f32[8,4] on [_, (x, y)], p: f32[4,8] on [x, y], i: i32[1] on [x]) {
  %r = all_reduce %a {axes=[y], kind=max} : f32[4,8]
  %g = all_gather %a {axes=[y], dim=1} : f32[4,16]
  %s = reduce_scatter %a {axes=[y], dim=0, kind=sum} : f32[2,8]
  %t = all_to_all %a {axes=[y], split_dim=1, concat_dim=0} : f32[8,4]
  %p = collective_permute %a {axes=[y], shift=1} : f32[4,8]
  %i = axis_index {axis=x} : i32[]
  %ib = broadcast %i : i32[1]
  return %r, %g, %s, %t, %p, %ib
}
