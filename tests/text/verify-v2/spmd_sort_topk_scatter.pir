// test: error
// sort, top_k and scatter are ordinary ops for the replication rule: their results
// are the same on every device only when all their operands are. Here %x is split
// over 'data', so none of the unsplit results is.
mesh [data=2]

spmd func @main(%x: f32[8] on [data], %idx: i32[2], %u: f32[2]) -> (s: f32[8], v: f32[2], i: i32[2], c: f32[8]) {
  %s = sort %x {dim=0}
  %v, %i = top_k %x {k=2}
  %c = scatter %x, %idx, %u {axis=0, kind=max}
  return %s, %v, %i, %c
}
