// The pipeline benchmark's step (benches/pipeline/run.sh): tests/pipeline/mlp_step.pir
// at 256 wide, batch 256: one SGD step of 8 stacked tanh layers, the stack on
// [stage, ...]. Compiled with and without --pipeline stage --microbatches M.
mesh [data=1, stage=4]

func @layer(%h: f32[256,256], %w: f32[256,256], %b: f32[256]) -> (f32[256,256]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[256,256]
  %bb = broadcast %b {dims=[1]} : f32[256,256]
  %z = add %y, %bb
  %t = tanh %z
  return %t
}

func @loss(%ws: f32[8,256,256], %bs: f32[8,256], %x: f32[256,256], %y: f32[256,256]) -> (f32[]) {
  %h = scan @layer(%x, %ws, %bs) {length=8, carries=1} : f32[256,256]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 256.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%ws: f32[8,256,256] on [stage, _, _], %bs: f32[8,256] on [stage, _], %x: f32[256,256] on [data, _], %y: f32[256,256] on [data, _]) -> (loss: f32[], ws: f32[8,256,256] on [stage, _, _], bs: f32[8,256] on [stage, _]) {
  %l, %gw, %gb = grad @loss(%ws, %bs, %x, %y) {wrt=[0,1]} : (f32[], f32[8,256,256], f32[8,256])
  %lr = constant 0.05 : f32[]
  %lw = broadcast %lr : f32[8,256,256]
  %uw = mul %gw, %lw
  %ws2 = sub %ws, %uw
  %lb = broadcast %lr : f32[8,256]
  %ub = mul %gb, %lb
  %bs2 = sub %bs, %ub
  return %l, %ws2, %bs2
}
