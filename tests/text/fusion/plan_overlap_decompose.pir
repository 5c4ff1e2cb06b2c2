// test: plan
// Latency hiding with the cost model (pjc_fusion::schedule) and collective
// decomposition (pjc_partition::decompose_all_reduces):
// - %b's chain (two products, 2 x 268 MFLOP per device) comes first in the
//   program, but the scheduler runs %g first: it is the step closest to a
//   collective, so %g's all-reduce starts at once and %b's chain runs while it
//   is in flight;
// - %g2's all-reduce has no compute after it that could hide it, so it is
//   split with its product into chunks along %h's free dimension (each
//   chunk's product hides the previous chunk's all-reduce at the CPU
//   figures), concatenated back where the all-reduce was.
// %h and %d are large (4 MiB per device) so that the pairs in flight stay
// within the scheduler's memory bound (10 % over the program order's peak);
// with 1024 rows the bound turns most of them back into blocking ones.
mesh [data=2]

func @main(%h: f32[4096,512] on [data, _], %d: f32[4096,512] on [data, _], %y: f32[512,512], %v: f32[512,512], %w: f32[512,512]) -> (s: f32[512,512], g: f32[512,512], w: f32[512,512]) {
  %b = dot_general %y, %v {lhs_contract=[1], rhs_contract=[0]} : f32[512,512]
  %c = dot_general %b, %v {lhs_contract=[1], rhs_contract=[0]} : f32[512,512]
  %g = dot_general %d, %h {lhs_contract=[0], rhs_contract=[0]} : f32[512,512]
  %e = exp %c
  %g2 = dot_general %h, %e {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  %g3 = dot_general %g2, %d {lhs_contract=[0], rhs_contract=[0]} : f32[512,512]
  %wn = sub %w, %g3
  return %c, %g, %wn
}
