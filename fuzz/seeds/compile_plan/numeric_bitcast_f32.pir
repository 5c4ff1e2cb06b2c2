func @main(%x: f32[20],
           %u: u32[12],
           %i: i32[12]) -> (xu: u32[20], xi: i32[20], uf: f32[12], i_f: f32[12]) {
  %xu = bitcast_convert %x : u32[20]
  %xi = bitcast_convert %x : i32[20]
  %uf = bitcast_convert %u : f32[12]
  %i_f = bitcast_convert %i : f32[12]
  return %xu, %xi, %uf, %i_f
}
