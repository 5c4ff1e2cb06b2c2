// test: check
// The valid form of invalid/spmd_replication_*: after all_reduce over data, 'y' is
// the same on every device along data, so it need not be split over data.
mesh [data=4]

spmd func @main(%x: f32[16,8] on [data, _]) -> (y: f32[8], z: f32[4,8]) {
  %p = reduce %x {dims=[0], kind=sum}
  %y = all_reduce %p {axes=[data], kind=sum}
  %i = axis_index {axis=data} : i32[]
  %f = convert %i : f32[]
  %fb = broadcast %f : f32[16,8]
  %xs = add %x, %fb
  %rs = reduce_scatter %xs {axes=[data], dim=0, kind=sum}
  %z = all_reduce %rs {axes=[data], kind=sum}
  return %y, %z
}
