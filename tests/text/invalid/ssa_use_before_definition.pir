// test: error
// %b is used on the line before its definition.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %a = add %x, %b
  %b = mul %x, %x
  %y = add %a, %b
  return %y
}
