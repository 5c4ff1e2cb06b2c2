// test: llvm
// A row reduction: one output point per row, an inner loop over the row.
// The optimized x86-64-v3 IR, precisely (moved from pjc-codegen's snapshots).
func @main(%x: f32[2,5]) -> (s: f32[2]) {
  %s = reduce %x {dims=[1], kind=sum}
  return %s
}
