// test: eval
// Integer div and rem (spec section 11): truncation toward zero, x/0 = -1 (all
// bits set for unsigned), x rem 0 = x, INT_MIN/-1 = INT_MIN, INT_MIN rem -1 = 0.
func @main() -> (q: i32[6], r: i32[6], u: u8[2]) {
  %a = constant [7, -7, 7, 5, -2147483648, -2147483648] : i32[6]
  %b = constant [2, 2, -2, 0, -1, 3] : i32[6]
  %q = div %a, %b
  %r = rem %a, %b
  %x = constant [200, 9] : u8[2]
  %z = constant [0, 4] : u8[2]
  %u = div %x, %z
  return %q, %r, %u
}
