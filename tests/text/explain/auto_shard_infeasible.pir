// test: explain --auto-shard --memory-limit 1000
// No plan fits 1000 bytes per device: the program is left to propagation as
// written (everything replicated) and a warning says why.
mesh [data=4]
func @main(%x: f32[4096,512], %w: f32[512,512]) -> (y: f32[4096,512]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  return %y
}
