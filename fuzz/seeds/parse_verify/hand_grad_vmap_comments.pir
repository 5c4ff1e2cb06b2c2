// file comment
mesh [data=2, model=2]  // eol on mesh

// before @dot
func @dot(%a: f32[16], %b: f32[16]) -> (f32[]) {  // eol on func
  // before %d
  %d = dot_general %a, %b {lhs_contract=[0], rhs_contract=[0]}
  return %d  // eol on return
  // end of body
}

func @main(%w: f32[16] on [model], %as: f32[8,16]) -> (w: f32[16] on [model], ys: f32[8], l: f32[]) {
  %ys = vmap @dot(%as, %w) {in_dims=[0,none], out_dims=[0]} : f32[8]
  %l, %g0, %g1 = grad @dot(%w, %w) {wrt=[0,1]} : (f32[], f32[16], f32[16])
  %h = constant [[1e-05, -inf, nan], [0, 65504, 3.4e38]] : f16[2,3]
  %e = constant -0.0 : bf16[4,4] on [data, ?]
  return %w, %ys, %l
}
// trailing comment
