// test: explain
// Rules that keep a dim whole: gather's looked-up table axis and scatter_add's
// base axis need replication (scatter_add's index dims are reductions no
// collective completes), as do concat's joined dim and slice's cut dim; the
// other dims pass through.
mesh [data=2, model=2]

func @main(%table: f32[100,16] on [_, model], %idx: i32[8] on [data], %upd: f32[8,16]) -> (rows: f32[8,24], acc: f32[100,16]) {
  %rows0 = gather %table, %idx {axis=0}
  %both = concat %rows0, %upd {dim=1}
  %rows = slice %both {start=[0, 0], limit=[8, 24]}
  %acc = scatter_add %table, %idx, %upd {axis=0}
  return %rows, %acc
}
