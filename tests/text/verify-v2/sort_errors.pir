// test: error
// sort: operands of one shape and rank >= 1, 1 <= num_keys <= the number of
// operands, 'dim' in range, 'descending' a boolean, 'dim' required.
func @main(%x: f32[4,3], %v: i32[4], %s: f32[]) -> (y: f32[4,3]) {
  %a, %b = sort %x, %v {dim=0}
  %c = sort %x {dim=0, num_keys=2}
  %d = sort %x {dim=2}
  %e = sort %x {dim=0, descending=1}
  %f = sort %s {dim=0}
  %g = sort %x
  return %x
}
