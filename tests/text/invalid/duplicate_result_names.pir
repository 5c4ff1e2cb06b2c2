// test: error
// Result names are unique (they name the output files).
func @main(%x: f32[4]) -> (y: f32[4], y: f32[4]) {
  %a = neg %x
  return %a, %x
}
