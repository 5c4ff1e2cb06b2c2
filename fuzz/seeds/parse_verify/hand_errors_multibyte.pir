func @mé(%x: f32[2]) -> (f32[2]) {
	%y = ad€ %x, %x
  %z = "unterminated
  return %y
}
// 😀 