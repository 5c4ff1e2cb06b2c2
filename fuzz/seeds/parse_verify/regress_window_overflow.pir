func @main(%x: f32[18446744073709551615]) -> (f32[18446744073709551615]) {
  %y = reduce_window %x {window=[1], padding=[[9223372036854775807, 9223372036854775807]], kind=sum}
  return %x
}
