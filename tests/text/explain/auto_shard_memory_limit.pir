// test: explain --auto-shard --memory-limit 4718592
// Data parallel (x split by rows, the 1 MiB w replicated) needs 5 MiB per
// device (x/4 + w + y/4); the 4.5 MiB limit forces w to be split as well.
mesh [data=4]
func @main(%x: f32[4096,512], %w: f32[512,512]) -> (y: f32[4096,512]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  return %y
}
