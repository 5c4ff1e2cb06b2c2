func @main(%x: f64[18],
           %i: i64[8]) -> (xi: i64[18], xu: u64[18], i_f: f64[8]) {
  %xi = bitcast_convert %x : i64[18]
  %xu = bitcast_convert %x : u64[18]
  %i_f = bitcast_convert %i : f64[8]
  return %xi, %xu, %i_f
}
