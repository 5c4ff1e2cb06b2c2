// test: llvm-unopt
// Elementwise bf16: widened to f32, added, rounded back to bf16 (to nearest even).
// The IR as pjc's lowering builds it, before LLVM's O3 pipeline.
func @main(%a: bf16[3], %b: bf16[3]) -> (r: bf16[3]) {
  %r = add %a, %b
  return %r
}
