// test: error
// axis is a dimension of the table (rank 2).
func @main(%table: f32[100,16], %idx: i32[8]) -> (y: f32[8,16]) {
  %y = gather %table, %idx {axis=2}
  return %y
}
