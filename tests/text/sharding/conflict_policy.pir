// test: sharded
// Conflicts, resolved by the documented policy: for %s both operands are
// annotated and equally big, so the split over more devices (model, 4) wins
// over data (2). For %u the annotated operand %small beats the value %r that
// only got its split by propagation; and elementwise ops propagate before
// reductions, so %r itself follows %small, not %big.
mesh [data=2, model=4]

func @main(%a: f32[16,16] on [data, _], %b: f32[16,16] on [model, _], %big: f32[16,1024] on [data, _], %small: f32[16] on [model]) -> (s: f32[16,16], u: f32[16]) {
  %s = add %a, %b
  %r = reduce %big {dims=[1], kind=sum}
  %u = add %r, %small
  return %s, %u
}
