// test: fmt
// grad (value_and_grad) and vmap.
func @loss(%w: f32[4], %b: f32[], %x: f32[4], %n: i32[]) -> (l: f32[]) {
  %p = mul %w, %x
  %s = reduce %p {dims=[0], kind=sum}
  %l = add %s, %b
  return %l
}

func @dot(%a: f32[16], %b: f32[16]) -> (c: f32[]) {
  %c = dot_general %a, %b {lhs_contract=[0], rhs_contract=[0]}
  return %c
}

func @pair(%a: f32[16]) -> (f32[16], f32[]) {
  %s = reduce %a {dims=[0], kind=sum}
  return %a, %s
}

func @main(%w: f32[4], %b: f32[], %x: f32[4], %n: i32[], %as: f32[8,16], %v: f32[16], %bs: f32[16,8]) -> (l: f32[], gw: f32[4], gb: f32[], ys: f32[8], zs: f32[8], ps: f32[16,8], ss: f32[8]) {
  %l, %gw, %gb = grad @loss(%w, %b, %x, %n) {wrt=[0, 1]} : (f32[], f32[4], f32[])
  %ys = vmap @dot(%as, %v) {in_dims=[0, none], out_dims=[0]} : f32[8]
  %zs = vmap @dot(%as, %bs) {in_dims=[0, 1], out_dims=[0]}
  %ps, %ss = vmap @pair(%bs) {in_dims=[1], out_dims=[1, 0]}
  return %l, %gw, %gb, %ys, %zs, %ps, %ss
}
