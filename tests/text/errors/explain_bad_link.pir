// test: error explain --link-gbps 0
// The cost model's peaks must be positive: a zero link bandwidth is refused
// with one line (exit 2) before any compilation.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
