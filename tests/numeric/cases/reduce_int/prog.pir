func @main(%x: i32[5,7],
           %y: u8[4,9],
           %z: i64[3,4],
           %s: i8[2,5]) -> (x_sum1: i32[5], x_prod0: i32[7], x_max01: i32[], x_min1: i32[5], y_sum1: u8[4], y_prod0: u8[9], y_max1: u8[4], y_min0: u8[9], z_sum0: i64[4], s_prod1: i8[2]) {
  %x_sum1 = reduce %x {dims=[1], kind=sum} : i32[5]
  %x_prod0 = reduce %x {dims=[0], kind=prod} : i32[7]
  %x_max01 = reduce %x {dims=[0, 1], kind=max} : i32[]
  %x_min1 = reduce %x {dims=[1], kind=min} : i32[5]
  %y_sum1 = reduce %y {dims=[1], kind=sum} : u8[4]
  %y_prod0 = reduce %y {dims=[0], kind=prod} : u8[9]
  %y_max1 = reduce %y {dims=[1], kind=max} : u8[4]
  %y_min0 = reduce %y {dims=[0], kind=min} : u8[9]
  %z_sum0 = reduce %z {dims=[0], kind=sum} : i64[4]
  %s_prod1 = reduce %s {dims=[1], kind=prod} : i8[2]
  return %x_sum1, %x_prod0, %x_max01, %x_min1, %y_sum1, %y_prod0, %y_max1, %y_min0, %z_sum0, %s_prod1
}
