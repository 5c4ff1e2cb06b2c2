// test: fmt
// No mesh: one device; shardings may only be '_' (or '?' inside a body).
func @main(%x: f32[4,4] on [_, _]) -> (y: f32[4,4] on [_, _]) {
  %y = neg %x : f32[4,4] on [?, _]
  return %y
}
