// sort and top_k need the whole sorted dimension on each device: along a
// split dimension the operands are gathered (the collective's reason says
// so); along an unsplit one each device sorts its own block; a result wanted
// split on another dimension takes the split there with one all_to_all.
mesh [data=4]

func @main(%k: f32[8,12] on [_, data], %v: i32[8,12] on [data, _], %h: bf16[8,12] on [data, _], %p: pred[8,12] on [_, data])
    -> (a: f32[8,12], ai: i32[8,12], b: f32[8,12] on [_, data], bv: i32[8,12] on [_, data], c: f32[8,3], ci: i32[8,3],
        d: bf16[8,12] on [data, _], dp: pred[8,12] on [data, _], e: f32[8,12] on [data, _]) {
  // argsort along the split dimension 1: gathered
  %io = iota {dim=1} : i32[8,12]
  %a, %ai = sort %k, %io {dim=1, descending=true}
  // along dimension 0, which is not split: no communication for %k
  %b, %bv = sort %k, %v {dim=0, num_keys=2}
  // the k largest over the split last dimension: gathered
  %c, %ci = top_k %k {k=3}
  // two keys (bf16, then pred) along dimension 1, rows split over data
  %d, %dp = sort %h, %p {dim=1, num_keys=2, descending=true}
  // sorted along the split dimension 1, wanted split on dimension 0
  %e = sort %k {dim=1}
  return %a, %ai, %b, %bv, %c, %ci, %d, %dp, %e
}
