// test: explain
// Every value's reason names the annotation and the ops the split travelled
// through, in order; the result is replicated (unannotated), so one all_gather
// at the end, with its bytes.
mesh [data=4]

func @main(%x: f32[16,8] on [data, _]) -> (y: f32[16,8]) {
  %e = exp %x
  %n = neg %e
  %t = tanh %n
  %y = add %t, %x
  return %y
}
