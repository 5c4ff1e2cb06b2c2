func @main(%x: f32[5,7]) -> (y: f32[5,7]) {
  %m = reduce %x {dims=[1], kind=max} : f32[5]
  %mb = broadcast %m {dims=[0]} : f32[5,7]
  %d = sub %x, %mb : f32[5,7]
  %e = exp %d : f32[5,7]
  %s = reduce %e {dims=[1], kind=sum} : f32[5]
  %sb = broadcast %s {dims=[0]} : f32[5,7]
  %y = div %e, %sb : f32[5,7]
  return %y
}
