// One SGD step of a stack of 8 tanh layers, written as flax nn.scan over
// layers exports it: the layers' weights stacked along dimension 0, which
// is split over the stage axis. Without --pipeline the scan's dimension 0 is
// never split (spec section 6), so every device gathers all 8 layers; with
// --pipeline stage --microbatches M, stage k holds layers 2k, 2k+1 only and
// the batch flows through the stages in M micro-batches
// (tests: crates/pjc/tests/pipeline.rs; docs/training.md).
mesh [data=1, stage=4]

func @layer(%h: f32[32,32], %w: f32[32,32], %b: f32[32]) -> (f32[32,32]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[32,32]
  %bb = broadcast %b {dims=[1]} : f32[32,32]
  %z = add %y, %bb
  %t = tanh %z
  return %t
}

func @loss(%ws: f32[8,32,32], %bs: f32[8,32], %x: f32[32,32], %y: f32[32,32]) -> (f32[]) {
  %h = scan @layer(%x, %ws, %bs) {length=8, carries=1} : f32[32,32]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 32.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%ws: f32[8,32,32] on [stage, _, _], %bs: f32[8,32] on [stage, _], %x: f32[32,32] on [data, _], %y: f32[32,32] on [data, _]) -> (loss: f32[], ws: f32[8,32,32] on [stage, _, _], bs: f32[8,32] on [stage, _]) {
  %l, %gw, %gb = grad @loss(%ws, %bs, %x, %y) {wrt=[0,1]} : (f32[], f32[8,32,32], f32[8,32])
  %lr = constant 0.05 : f32[]
  %lw = broadcast %lr : f32[8,32,32]
  %uw = mul %gw, %lw
  %ws2 = sub %ws, %uw
  %lb = broadcast %lr : f32[8,32]
  %ub = mul %gb, %lb
  %bs2 = sub %bs, %ub
  return %l, %ws2, %bs2
}
