// test: fmt
// Literals of every dtype kind; a scalar literal fills a non-scalar type.
func @main() -> (a: i32[2,2], b: u8[3], c: pred[2], d: f32[2,2], e: i64[], f: pred[3], g: i8[2], h: u64[1]) {
  %a = constant [[1, 2], [3, -4]] : i32[2,2]
  %b = constant [0, 128, 255] : u8[3]
  %c = constant [true, false] : pred[2]
  %d = constant 7 : f32[2,2]
  %e = constant -9223372036854775808 : i64[]
  %f = constant false : pred[3]
  %g = constant [-128, 127] : i8[2]
  %h = constant [18446744073709551615] : u64[1]
  return %a, %b, %c, %d, %e, %f, %g, %h
}
