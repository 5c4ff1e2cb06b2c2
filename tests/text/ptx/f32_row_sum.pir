// test: ptx
// A row reduction: one output point per row, an inner loop over the row.
// The sm_90 PTX, precisely (moved from pjc-codegen's snapshots).
func @main(%x: f32[2,5]) -> (s: f32[2]) {
  %s = reduce %x {dims=[1], kind=sum}
  return %s
}
