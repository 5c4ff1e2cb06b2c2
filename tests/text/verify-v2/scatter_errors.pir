// test: error
// scatter: 'kind' is one of set add mul max min and required; indices are integers;
// updates are shaped like the matching gather (base dims before axis, the index
// shape, base dims after axis) with the base's dtype.
func @main(%b: f32[5,3], %idx: i32[2], %fi: f32[2], %u: f32[2,3], %w: f32[3,3]) -> (y: f32[5,3]) {
  %a = scatter %b, %idx, %u {axis=0, kind=sub}
  %c = scatter %b, %idx, %u {axis=0}
  %d = scatter %b, %fi, %u {axis=0, kind=set}
  %e = scatter %b, %idx, %w {axis=0, kind=min}
  return %b
}
