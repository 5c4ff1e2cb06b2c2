func @main(%x: f64[7,9],
           %w: f64[7,9]) -> (sum01: f64[], prod1: f64[7], max0: f64[9], min1: f64[7]) {
  %sum01 = reduce %x {dims=[0, 1], kind=sum} : f64[]
  %prod1 = reduce %w {dims=[1], kind=prod} : f64[7]
  %max0 = reduce %x {dims=[0], kind=max} : f64[9]
  %min1 = reduce %x {dims=[1], kind=min} : f64[7]
  return %sum01, %prod1, %max0, %min1
}
