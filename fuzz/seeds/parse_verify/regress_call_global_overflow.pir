mesh [a=2]
spmd func @f(%x: f32[18446744073709551615] on [a]) -> (f32[18446744073709551615] on [a]) {
  return %x
}
func @main(%x: f32[4]) -> (f32[4]) {
  %y = call @f(%x)
  return %x
}
