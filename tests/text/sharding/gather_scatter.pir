// test: sharded
// Embedding lookup: the table is split on its feature dim, the indices on the
// batch; the gathered rows carry both. scatter_add (its gradient) keeps the
// table's split; the looked-up axis itself is never split.
mesh [data=2, model=2]

func @main(%table: f32[100,16] on [_, model], %idx: i32[8] on [data], %upd: f32[8,16]) -> (rows: f32[8,16], acc: f32[100,16]) {
  %rows = gather %table, %idx {axis=0}
  %acc = scatter_add %table, %idx, %upd {axis=0}
  return %rows, %acc
}
