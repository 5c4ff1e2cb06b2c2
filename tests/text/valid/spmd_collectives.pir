// test: fmt
// A spmd func using every collective (per-device view).
mesh [data=4, model=2]

spmd func @main(%x: f32[8,16] on [data, model]) -> (r: f32[8,16] on [data, model], g: f32[8,32] on [data, _], s: f32[2,16] on [(data, model), _], t: f32[2,64] on [data, model], p: f32[8,16] on [data, model], i: i32[]) {
  %r = all_reduce %x {axes=[model], kind=max}
  %g = all_gather %x {axes=[model], dim=1}
  %s0 = reduce_scatter %x {axes=[data], dim=0, kind=sum}
  %s = all_reduce %s0 {axes=[model], kind=sum}
  %s1 = reduce_scatter %x {axes=[data, model], dim=0, kind=min} : f32[1,16]
  %t = all_to_all %x {axes=[data], split_dim=0, concat_dim=1}
  %p = collective_permute %x {axes=[data], shift=-1}
  %i0 = axis_index {axis=model} : i32[]
  %i1 = collective_permute %i0 {axes=[model], shift=1}
  %i = all_reduce %i1 {axes=[model], kind=sum}
  return %r, %g, %s, %t, %p, %i
}
