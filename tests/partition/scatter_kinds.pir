// scatter of every kind on a 2x2 mesh: the base's non-axis dimension keeps
// its split (each device combines into its own columns); the index
// dimensions are gathered, since partial scatters cannot be combined for
// set (the last duplicate in index order wins) and would count the base once
// per device for add and mul; top_k keeps the split of its batch dimension.
mesh [data=2, model=2]

func @main(%base: f32[10,8] on [_, model], %idx: i32[8] on [data], %upd: f32[8,8] on [data, model], %ib: i64[4,2] on [data, _],
           %ub: i32[6,4,2] on [_, data, _], %bi: i32[6,5], %bp: pred[10,8] on [_, model], %x: f32[8,16] on [data, model])
    -> (s: f32[10,8], ad: f32[10,8] on [_, model], m: f32[10,8], mx: f32[10,8], mn: f32[10,8] on [model, _],
        si: i32[6,5], mi: i32[6,5], xp: pred[10,8], t: f32[8,4] on [data, _], ti: i32[8,4] on [data, _]) {
  %s = scatter %base, %idx, %upd {axis=0, kind=set}
  %ad = scatter_add %base, %idx, %upd {axis=0}
  %m = scatter %base, %idx, %upd {axis=0, kind=mul}
  %mx = scatter %base, %idx, %upd {axis=0, kind=max}
  %mn = scatter %base, %idx, %upd {axis=0, kind=min}
  // indices of rank 2 along axis 1 of an integer base
  %si = scatter %bi, %ib, %ub {axis=1, kind=set}
  %mi = scatter %bi, %ib, %ub {axis=1, kind=mul}
  %pu = compare %upd, %upd {dir=eq}
  %xp = scatter %bp, %idx, %pu {axis=0, kind=max}
  %t, %ti = top_k %x {k=4}
  return %s, %ad, %m, %mx, %mn, %si, %mi, %xp, %t, %ti
}
