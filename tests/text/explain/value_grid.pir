// test: explain --value %w --mesh data=2,model=3
// --value prints one value's sharding like jax.debug.visualize_array_sharding:
// its blocks (index ranges along the split dimensions), each cell naming the
// devices that hold it; %w is split over model and replicated over data, so
// each block is on two devices.
mesh [data=2, model=2]

func @main(%x: f32[4,6] on [data, _], %w: f32[6,12] on [_, model]) -> (y: f32[4,12]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
