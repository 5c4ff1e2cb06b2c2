// test: error pir --accumulate 2
// A loss that uses a sum over the batch per example (here: centring by the
// batch total) does not add up over micro-batches: the op is named.
mesh [data=2]

func @loss(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[]) {
  %wb = broadcast %w {dims=[1]} : f32[8,4]
  %p = mul %x, %wb
  %s = reduce %p {dims=[0,1], kind=sum} : f32[]
  %sb = broadcast %s : f32[8,4]
  %c = sub %p, %sb
  %c2 = mul %c, %c
  %l = reduce %c2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[], g: f32[4]) {
  %l, %g = grad @loss(%w, %x) {wrt=[0]} : (f32[], f32[4])
  return %l, %g
}
