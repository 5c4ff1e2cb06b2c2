// test: error
// Lists have no trailing comma: arguments, branches, operands, attributes and
// result types. Each statement is reported on its own.
func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @main(%i: i32[], %x: f32[4]) -> (y: f32[4]) {
  %a = switch %i, @b0(%x,)
  %b = switch %i, @b0, (%x)
  %c, %d = sort %x, {dim=0}
  %e = scan @b0(%x) {length=2, carries=1,}
  %f, %g = top_k %x {k=2} : (f32[2], i32[2],)
  return %x
}
