func @main(%s: f32[6,5],
           %t: f32[5,3]) -> (max1: f32[6], min1: f32[6], prod1: f32[6], sum_t: f32[5]) {
  %max1 = reduce %s {dims=[1], kind=max} : f32[6]
  %min1 = reduce %s {dims=[1], kind=min} : f32[6]
  %prod1 = reduce %s {dims=[1], kind=prod} : f32[6]
  %sum_t = reduce %t {dims=[1], kind=sum} : f32[5]
  return %max1, %min1, %prod1, %sum_t
}
