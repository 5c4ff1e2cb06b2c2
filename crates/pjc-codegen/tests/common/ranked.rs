//! Programs of sort, top_k and every scatter kind whose device kernels the
//! code generator's tests run on the x86 JIT (`device_forms.rs`) and assemble
//! with ptxas (`ptx.rs`).

/// Several keys in both directions; pred, bf16, unsigned and 64-bit keys;
/// sorts along a leading dimension.
pub const SORT: &str = "func @main(%k: f32[5,7], %v: i32[5,7], %p: pred[5,7], %h: bf16[3,6], %w: u16[6,4], %l: i64[6,4]) -> (a: f32[5,7], b: i32[5,7], c: pred[5,7], d: bf16[3,6], e: i32[3,6], f: u16[6,4], g: i64[6,4], q: pred[5,7], r: f32[5,7]) {
  %a, %b, %c = sort %k, %v, %p {dim=1, num_keys=2, descending=true}
  %io = iota {dim=1} : i32[3,6]
  %d, %e = sort %h, %io {dim=1}
  %f, %g = sort %w, %l {dim=0, num_keys=2}
  %q, %r = sort %p, %k {dim=0, descending=true}
  return %a, %b, %c, %d, %e, %f, %g, %q, %r
}";

/// top_k with ties, several batch dimensions, k = n and k = 1.
pub const TOP_K: &str = "func @main(%x: f32[4,9], %y: i8[2,3,5], %z: f16[6]) -> (a: f32[4,3], b: i32[4,3], c: i8[2,3,5], d: i32[2,3,5], e: f16[1], f: i32[1]) {
  %a, %b = top_k %x {k=3}
  %c, %d = top_k %y {k=5}
  %e, %f = top_k %z {k=1}
  return %a, %b, %c, %d, %e, %f
}";

/// Every scatter kind whose result the spec makes exact: set, max, min (an
/// element is picked), integers and pred.
pub const SCATTER_EXACT: &str = "func @main(%b: f32[5,3], %i: i32[4], %u: f32[4,3], %c: i32[2,6], %j: u8[2,2], %w: i32[2,2,2], %h: bf16[4], %k: i64[3], %v: bf16[3], %p: pred[5], %q: pred[4]) -> (s: f32[5,3], x: f32[5,3], n: f32[5,3], si: i32[2,6], mi: i32[2,6], xi: i32[2,6], ni: i32[2,6], ai: i32[2,6], sh: bf16[4], xh: bf16[4], nh: bf16[4], sp: pred[5], ap: pred[5], mp: pred[5], xp: pred[5], np: pred[5]) {
  %s = scatter %b, %i, %u {axis=0, kind=set}
  %x = scatter %b, %i, %u {axis=0, kind=max}
  %n = scatter %b, %i, %u {axis=0, kind=min}
  %si = scatter %c, %j, %w {axis=1, kind=set}
  %mi = scatter %c, %j, %w {axis=1, kind=mul}
  %xi = scatter %c, %j, %w {axis=1, kind=max}
  %ni = scatter %c, %j, %w {axis=1, kind=min}
  %ai = scatter %c, %j, %w {axis=1, kind=add}
  %sh = scatter %h, %k, %v {axis=0, kind=set}
  %xh = scatter %h, %k, %v {axis=0, kind=max}
  %nh = scatter %h, %k, %v {axis=0, kind=min}
  %sp = scatter %p, %i, %q {axis=0, kind=set}
  %ap = scatter_add %p, %i, %q {axis=0}
  %mp = scatter %p, %i, %q {axis=0, kind=mul}
  %xp = scatter %p, %i, %q {axis=0, kind=max}
  %np = scatter %p, %i, %q {axis=0, kind=min}
  return %s, %x, %n, %si, %mi, %xi, %ni, %ai, %sh, %xh, %nh, %sp, %ap, %mp, %xp, %np
}";

/// Float products (within the spec's reassociation tolerance).
pub const SCATTER_MUL: &str = "func @main(%b: f32[5,3], %i: i32[4], %u: f32[4,3], %c: i32[2,6], %j: u8[2,2], %w: i32[2,2,2], %h: bf16[4], %k: i64[3], %v: bf16[3], %p: pred[5], %q: pred[4]) -> (m: f32[5,3], mh: bf16[4]) {
  %m = scatter %b, %i, %u {axis=0, kind=mul}
  %mh = scatter %h, %k, %v {axis=0, kind=mul}
  return %m, %mh
}";

/// All of them, named.
pub fn programs() -> Vec<(&'static str, &'static str)> {
    vec![("sort", SORT), ("top_k", TOP_K), ("scatter_exact", SCATTER_EXACT), ("scatter_mul", SCATTER_MUL)]
}
