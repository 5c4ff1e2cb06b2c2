// A per-device buffer just under 2^64 bytes: aligning it to 64 bytes overflowed.
mesh [data=4]
func @main(%x: f32[18446744073709551612] on [data]) -> (y: f32[]) {
  %y = reduce %x {dims=[0], kind=sum}
  return %y
}
