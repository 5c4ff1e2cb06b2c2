// test: explain
// concat's dimension cannot be split (need-replication): %c is replicated
// along it, its operands are gathered, and the table says why each stays whole.
mesh [data=2]

func @main(%a: f32[4,3] on [data, _], %b: f32[4,3] on [data, _]) -> (c: f32[8,3]) {
  %c = concat %a, %b {dim=0}
  return %c
}
