// test: eval
// float -> int truncates toward zero and saturates at the type's range; NaN
// becomes 0; number -> pred is != 0.
func @main() -> (i: i8[5], p: pred[3]) {
  %x = constant [1.9, -1.9, 300.0, -300.0, nan] : f32[5]
  %i = convert %x : i8[5]
  %y = constant [0.0, -0.0, 0.5] : f32[3]
  %p = convert %y : pred[3]
  return %i, %p
}
