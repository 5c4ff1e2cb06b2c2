// test: error
// Several independent type errors: each is reported, and values whose definition
// failed do not cause more errors where they are used.
mesh [data=4]

func @main(%x: f32[4,8], %i: i32[4]) -> (y: f32[4,8], s: f32[]) {
  %a = exp %i
  %b = add %a, %a
  %c = transpose %x {perm=[0,0]}
  %d = reduce %x {dims=[0,1], kind=sum} : f32[1]
  %e = all_reduce %x {axes=[data], kind=sum}
  %y = add %x, %x
  return %y, %d
}
