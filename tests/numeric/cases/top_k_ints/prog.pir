func @main(%x: i8[2,3,8],
           %u: u64[1,6],
           %q: pred[5]) -> (v: i8[2,3,4], i: i32[2,3,4], uv: u64[1,3], ui: i32[1,3], qv: pred[2], qi: i32[2]) {
  %v, %i = top_k %x {k=4} : (i8[2,3,4], i32[2,3,4])
  %uv, %ui = top_k %u {k=3} : (u64[1,3], i32[1,3])
  %qv, %qi = top_k %q {k=2} : (pred[2], i32[2])
  return %v, %i, %uv, %ui, %qv, %qi
}
