// test: error pir --accumulate 3
// --accumulate 3 splits the batch into 3 equal micro-batches: 8 rows do not
// divide, reported against the batch parameter (exit 1, as for --mesh).
mesh [data=2]

func @loss(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[]) {
  %wb = broadcast %w {dims=[1]} : f32[8,4]
  %p = mul %x, %wb
  %l = reduce %p {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[], g: f32[4]) {
  %l, %g = grad @loss(%w, %x) {wrt=[0]} : (f32[], f32[4])
  return %l, %g
}
