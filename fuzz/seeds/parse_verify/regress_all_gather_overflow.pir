mesh [a=2]
spmd func @main(%x: f32[18446744073709551615]) -> (f32[18446744073709551615]) {
  %y = all_gather %x {axes=[a], dim=0}
  return %x
}
