func @main(%x: f32[3,12]) -> (a: f32[3,12], ai: i32[3,12], d: f32[3,12], di: i32[3,12]) {
  %pos = iota {dim=1} : i32[3,12]
  %a, %ai = sort %x, %pos {dim=1} : (f32[3,12], i32[3,12])
  %d, %di = sort %x, %pos {dim=1, descending=true} : (f32[3,12], i32[3,12])
  return %a, %ai, %d, %di
}
