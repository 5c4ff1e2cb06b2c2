// test: error
// iota's dim must be a dimension of the result (rank 2: 0 or 1).
func @main() -> (y: i32[8,3]) {
  %y = iota {dim=2} : i32[8,3]
  return %y
}
