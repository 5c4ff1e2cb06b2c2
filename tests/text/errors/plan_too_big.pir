// test: error plan
// A value of more than 2^64 bytes per device has no kernel plan: the planner
// says so (exit 2) instead of overflowing.
func @main() -> (y: f32[4294967296,4294967296,4]) {
  %y = constant 1.0 : f32[4294967296,4294967296,4]
  return %y
}
