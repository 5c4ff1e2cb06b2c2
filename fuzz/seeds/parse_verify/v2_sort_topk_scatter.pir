// test: fmt
// sort drops num_keys=1 and descending=false; top_k prints both result types;
// 'scatter {kind=add}' is scatter_add, the other kinds stay scatter.
func @main(%x: f32[8], %k2: i32[8], %b: f32[5,3], %idx: i32[2], %u: f32[2,3], %p: pred[4], %pi: i32[2], %pu: pred[2]) -> (s: f32[8], order: i32[8], d: f32[8], kk: i32[8], v: f32[8], t: f32[3], ti: i32[3], set: f32[5,3], add: f32[5,3], mul: f32[5,3], max: f32[5,3], min: f32[5,3], por: pred[4]) {
  %s = sort %x {descending=false, dim=0, num_keys=1}
  // argsort: a sort of (keys, iota).
  %iota = iota {dim=0} : i32[8]
  %sorted, %order = sort %x, %iota {dim=0}
  %d = sort %x {dim=0, descending=true}
  %kk, %kx, %kv = sort %k2, %x, %x {num_keys=2, dim=0}
  %t, %ti = top_k %x {k=3}
  %set = scatter %b, %idx, %u {kind=set, axis=0}
  %add = scatter %b, %idx, %u {axis=0, kind=add}
  %mul = scatter %b, %idx, %u {axis=0, kind=mul}
  %max = scatter %b, %idx, %u {axis=0, kind=max}
  %min = scatter %b, %idx, %u {axis=0, kind=min}
  %por = scatter %p, %pi, %pu {axis=0, kind=max}
  return %s, %order, %d, %kk, %kv, %t, %ti, %set, %add, %mul, %max, %min, %por
}
