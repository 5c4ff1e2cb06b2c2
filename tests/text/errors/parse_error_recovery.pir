// test: error
// Two syntax errors: the parser reports the unterminated shape (the caret
// after its last dimension), skips to the next statement it can start, and
// reports the unknown op too. The statement it skipped defines %b; uses of %b
// are not reported again (no cascade).
func @main(%x: f32[4]) -> (y: f32[4]) {
  %a = neg %x : f32[4
  %b = exp %x
  %c = foo %b
  %y = abs %b
  return %y
}
