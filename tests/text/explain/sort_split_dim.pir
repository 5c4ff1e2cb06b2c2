// test: explain
// sort needs the whole sorted dimension on each device: %x is split along
// it, so the partitioner gathers it and says why; the second sort is along
// the unsplit dimension 0 and keeps the split of dimension 1; top_k over the
// split last dimension needs it gathered too and reuses the sort's gather,
// while %y's rows stay split.
mesh [data=2]

func @main(%x: f32[4,6] on [_, data], %y: f32[4,6] on [data, _]) -> (a: f32[4,6], b: f32[4,6] on [_, data], t: f32[4,2], u: f32[4,2] on [data, _], ui: i32[4,2] on [data, _]) {
  %a = sort %x {dim=1}
  %b = sort %x {dim=0, descending=true}
  %t, %ti = top_k %x {k=2}
  %u, %ui = top_k %y {k=2}
  return %a, %b, %t, %u, %ui
}
