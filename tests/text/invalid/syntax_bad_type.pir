// test: error
// A type needs its shape in brackets (a scalar is f32[]).
func @main(%x: f32) -> (y: f32[]) {
  return %x
}
