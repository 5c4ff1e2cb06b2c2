mesh [data=2]

spmd func @step(%h: f32[1], %x: f32[2]) -> (f32[1], f32[4]) {
  %g = all_gather %x {axes=[data], dim=0} : f32[4]
  %s = reduce %g {dims=[0], kind=sum}
  %sb = broadcast %s : f32[1]
  %h2 = add %h, %sb
  return %h2, %g
}

spmd func @total(%h: f32[1]) -> (f32[1]) {
  %t = all_reduce %h {axes=[data], kind=sum}
  return %t
}

spmd func @largest(%h: f32[1]) -> (f32[1]) {
  %t = all_reduce %h {axes=[data], kind=max}
  return %t
}

spmd func @main(%h: f32[1] on [data], %xs: f32[3,2] on [_, data], %i: i32[], %j: u32[]) -> (hf: f32[1] on [data], gs: f32[3,4], t: f32[1] on [data], m: f32[1] on [data]) {
  %hf, %gs = scan @step(%h, %xs) {length=3, carries=1, reverse=true}
  %t = switch %i, @total, @largest(%hf)
  %m = switch %j, @total, @largest(%hf)
  return %hf, %gs, %t, %m
}
