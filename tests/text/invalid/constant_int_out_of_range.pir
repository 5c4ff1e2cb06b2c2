// test: error
// 300 does not fit in u8 (0..=255).
func @main() -> (y: u8[3]) {
  %y = constant [1, 300, 3] : u8[3]
  return %y
}
