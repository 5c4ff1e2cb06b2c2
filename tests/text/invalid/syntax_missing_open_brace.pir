// test: error
// The body's '{' is missing: the error points at the end of the signature.
func @main(%x: f32[4]) -> (y: f32[4])
  %y = neg %x
  return %y
}
