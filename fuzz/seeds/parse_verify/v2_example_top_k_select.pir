// Sorting and selection (PIR version 2): top-k classes per row with their
// indices, a 0/1 mask of those classes built by scatter {kind=set}, an argsort
// (a sort of keys and iota), and a switch that picks how to normalise the kept
// scores by a runtime mode (0: softmax over the k kept, 1: divide by their sum).
func @softmax(%v: f32[4,3]) -> (f32[4,3]) {
  %m = reduce %v {dims=[1], kind=max} : f32[4]
  %mb = broadcast %m {dims=[0]} : f32[4,3]
  %s = sub %v, %mb
  %e = exp %s
  %t = reduce %e {dims=[1], kind=sum} : f32[4]
  %tb = broadcast %t {dims=[0]} : f32[4,3]
  %p = div %e, %tb
  return %p
}

func @share(%v: f32[4,3]) -> (f32[4,3]) {
  %t = reduce %v {dims=[1], kind=sum} : f32[4]
  %tb = broadcast %t {dims=[0]} : f32[4,3]
  %p = div %v, %tb
  return %p
}

// Row r of the mask: ones at the k kept classes of row r.
func @mask_row(%idx: i32[3]) -> (f32[10]) {
  %zeros = constant 0.0 : f32[10]
  %ones = constant 1.0 : f32[3]
  %m = scatter %zeros, %idx, %ones {axis=0, kind=set}
  return %m
}

func @main(%scores: f32[4,10], %mode: i32[]) -> (vals: f32[4,3], idx: i32[4,3], mask: f32[4,10], order: i32[4,10], probs: f32[4,3]) {
  %vals, %idx = top_k %scores {k=3}
  %mask = vmap @mask_row(%idx) {in_dims=[0], out_dims=[0]} : f32[4,10]
  %iota = iota {dim=1} : i32[4,10]
  %sorted, %order = sort %scores, %iota {dim=1, descending=true}
  %probs = switch %mode, @softmax, @share(%vals)
  return %vals, %idx, %mask, %order, %probs
}
