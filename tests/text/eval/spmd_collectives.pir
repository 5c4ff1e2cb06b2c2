// test: eval
// A spmd entry runs on every device of the mesh in lockstep: each device's
// block of %i is its position, all_reduce sums over the group, all_gather
// concatenates the blocks; the results are global arrays (%p: the 4 blocks).
mesh [data=4]

spmd func @main() -> (p: i32[1] on [data], s: i32[] on [], g: i32[4] on [_]) {
  %pos = axis_index {axis=data} : i32[]
  %p = broadcast %pos : i32[1]
  %s = all_reduce %pos {axes=[data], kind=sum}
  %g = all_gather %p {axes=[data], dim=0} : i32[4]
  return %p, %s, %g
}
