// test: explain
// The factor rules section: each instruction's rule, instantiated from the op
// table's declaration. A batched dot_general reads like its declaration,
// ([b, i, k], [b, k, j]) -> ([b, i, j]) reduction={k}; reduce marks its
// reduced dims, transpose places the operand's dims by perm, broadcast's new
// dims are the result's alone.
mesh [data=2, model=2]

func @main(%q: f32[4,8,16] on [data, _, _], %k: f32[4,16,8]) -> (p: f32[4,8,8]) {
  %s = dot_general %q, %k {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}
  %m = reduce %s {dims=[2], kind=max}
  %mb = broadcast %m {dims=[0, 1]} : f32[4,8,8]
  %e = exp %s
  %d = sub %e, %mb
  %t = transpose %d {perm=[0, 2, 1]}
  %p = add %t, %d
  return %p
}
