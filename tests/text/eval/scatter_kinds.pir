// test: eval
// scatter (spec section 11, version 2) with duplicate indices (1 three times)
// and out-of-range ones (-1, 4: dropped): set keeps the last update in index
// order; add, mul, max and min combine the base with every update (max/min
// propagate NaN and order -0.0 below +0.0); on pred add/max are or, mul/min
// are and. `scatter {kind=add}` is scatter_add.
func @main() -> (set: f32[4], add: f32[4], mul: f32[4], max: f32[4], min: f32[4],
                 pset: pred[3], por: pred[3], pand: pred[3], iadd: i8[2]) {
  %base = constant [10.0, -0.0, 5.0, 1.0] : f32[4]
  %idx = constant [1, 3, -1, 1, 4, 1, 2] : i32[7]
  %upd = constant [2.0, 3.0, 100.0, 0.0, 100.0, 4.0, nan] : f32[7]
  %set = scatter %base, %idx, %upd {axis=0, kind=set}
  %add = scatter %base, %idx, %upd {axis=0, kind=add}
  %mul = scatter %base, %idx, %upd {axis=0, kind=mul}
  %max = scatter %base, %idx, %upd {axis=0, kind=max}
  %zb = constant [0.0, -0.0, 0.0, 1.0] : f32[4]
  %zu = constant [-0.0, 0.0, -0.0, 3.0, 9.0, -5.0, -0.0] : f32[7]
  %min = scatter %zb, %idx, %zu {axis=0, kind=min}
  %pb = constant [true, false, false] : pred[3]
  %pi = constant [0, 1, 1, 5] : u32[4]
  %pu = constant [false, true, false, true] : pred[4]
  %pset = scatter %pb, %pi, %pu {axis=0, kind=set}
  %por = scatter %pb, %pi, %pu {axis=0, kind=max}
  %pand = scatter %pb, %pi, %pu {axis=0, kind=min}
  %ib = constant [120, -5] : i8[2]
  %ii = constant [0, 0, 1] : i64[3]
  %iu = constant [5, 5, -128] : i8[3]
  %iadd = scatter_add %ib, %ii, %iu {axis=0}
  return %set, %add, %mul, %max, %min, %pset, %por, %pand, %iadd
}
