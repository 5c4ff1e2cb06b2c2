// test: spmd
// An iota split along its dimension counts from the device's offset:
// axis_index times the block size is added to a local iota.
mesh [data=4]

func @main() -> (y: i32[16] on [data]) {
  %y = iota {dim=0} : i32[16]
  return %y
}
