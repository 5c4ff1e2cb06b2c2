// test: error
// axis_index gives an i32 scalar.
mesh [data=4]

spmd func @main() -> (i: i64[]) {
  %i = axis_index {axis=data} : i64[]
  return %i
}
