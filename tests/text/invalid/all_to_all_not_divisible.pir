// test: error
// all_to_all over 4 devices cuts split_dim into 4 chunks: 6 is not divisible by 4.
mesh [data=4]

spmd func @main(%x: f32[6,8] on [data, _]) -> (y: f32[6,8] on [data, _]) {
  %y = all_to_all %x {axes=[data], split_dim=0, concat_dim=1}
  return %y
}
