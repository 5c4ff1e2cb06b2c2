// test: llvm-unopt
// A row reduction: one output point per row, an inner loop over the row.
// The IR as pjc's lowering builds it, before LLVM's O3 pipeline.
func @main(%x: f32[2,5]) -> (s: f32[2]) {
  %s = reduce %x {dims=[1], kind=sum}
  return %s
}
