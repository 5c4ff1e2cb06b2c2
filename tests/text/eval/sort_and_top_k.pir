// test: eval
// sort (spec section 11, version 2): NaN of either sign sorts above +inf and
// NaNs keep their order, -0.0 equals +0.0 (so the zeros keep their order and
// their signs), ties keep their order in both directions; descending reverses
// the comparison, not the result. Two keys compare lexicographically; pred
// orders false < true. top_k: largest first, ties (and -0.0 vs +0.0) by lower
// index, NaN largest.
func @main() -> (up: f32[8], up_at: i32[8], down: f32[8], down_at: i32[8],
                 k0: i32[6], k1: f32[6], by_pred: pred[4], by_pred_at: i32[4],
                 top: f32[2,5], top_at: i32[2,5]) {
  // 4290772992 = 0xFFC00000, a NaN with the sign bit set.
  %bits = constant [0, 2143289344, 2147483648, 2139095040, 1065353216, 4290772992, 2147483648, 1065353216] : u32[8]
  %x = bitcast_convert %bits : f32[8]
  %at = iota {dim=0} : i32[8]
  %up, %up_at = sort %x, %at {dim=0}
  %down, %down_at = sort %x, %at {dim=0, descending=true}
  %a = constant [2, 1, 2, 1, 1, 2] : i32[6]
  %b = constant [0.5, 3.0, -1.0, 3.0, -2.0, nan] : f32[6]
  %k0, %k1 = sort %a, %b {dim=0, num_keys=2}
  %p = constant [true, false, true, false] : pred[4]
  %pat = iota {dim=0} : i32[4]
  %by_pred, %by_pred_at = sort %p, %pat {dim=0}
  %t = constant [[1.0, -0.0, 0.0, 7.0, 1.0], [nan, 2.0, inf, nan, -1.0]] : f32[2,5]
  %top, %top_at = top_k %t {k=5}
  return %up, %up_at, %down, %down_at, %k0, %k1, %by_pred, %by_pred_at, %top, %top_at
}
