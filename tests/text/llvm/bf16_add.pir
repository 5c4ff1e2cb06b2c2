// test: llvm
// Elementwise bf16: widened to f32, added, rounded back to bf16 (to nearest even).
// The optimized x86-64-v3 IR, precisely (moved from pjc-codegen's snapshots).
func @main(%a: bf16[3], %b: bf16[3]) -> (r: bf16[3]) {
  %r = add %a, %b
  return %r
}
