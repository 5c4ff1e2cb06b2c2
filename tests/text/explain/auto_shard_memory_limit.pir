// test: explain --auto-shard --memory-weight 0 --memory-limit 8912896
// Data parallel (x split by rows, the three 1 MiB weights replicated) needs
// 9 MiB per device at the first product (x/4, h1/4 and the weights); a split
// weight is gathered where it is used (a temporary of its whole size), so
// the 8.5 MiB limit forces one to be split (w1: at the peak, its gathered
// copy replaces it). --memory-weight 0: time alone, memory only bounded.
mesh [data=4]
func @main(%x: f32[4096,512], %w1: f32[512,512], %w2: f32[512,512], %w3: f32[512,512]) -> (y: f32[4096,512]) {
  %h1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  %h2 = dot_general %h1, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  %y = dot_general %h2, %w3 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  return %y
}
