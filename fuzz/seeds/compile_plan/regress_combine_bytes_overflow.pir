// Two all-reduces of 2^64 bytes each: the combiner summed their sizes unchecked.
mesh [data=4]
spmd func @main(%x: f32[4611686018427387904], %w: f32[4611686018427387904]) -> (y: f32[4611686018427387904], z: f32[4611686018427387904]) {
  %y = all_reduce %x {axes=[data], kind=sum}
  %z = all_reduce %w {axes=[data], kind=sum}
  return %y, %z
}
