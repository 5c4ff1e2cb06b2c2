func @main(%h: f16[18],
           %b: bf16[18],
           %hp: u16[9],
           %bp: u16[10],
           %bi: i16[10]) -> (hu: u16[18], hi: i16[18], bu: u16[18], bs: i16[18], hf: f16[9], bf: bf16[10], bif: bf16[10]) {
  %hu = bitcast_convert %h : u16[18]
  %hi = bitcast_convert %h : i16[18]
  %bu = bitcast_convert %b : u16[18]
  %bs = bitcast_convert %b : i16[18]
  %hf = bitcast_convert %hp : f16[9]
  %bf = bitcast_convert %bp : bf16[10]
  %bif = bitcast_convert %bi : bf16[10]
  return %hu, %hi, %bu, %bs, %hf, %bf, %bif
}
