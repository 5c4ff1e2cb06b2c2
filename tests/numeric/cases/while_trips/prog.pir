func @below(%i: i32[], %n: i32[], %x: f32[4]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

func @grow(%i: i32[], %n: i32[], %x: f32[4]) -> (i32[], i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %k = constant 1.5 : f32[4]
  %y = mul %x, %k
  %c = constant 0.25 : f32[4]
  %z = add %y, %c
  return %j, %n, %z
}

func @main(%x: f32[4],
           %n_zero: i32[],
           %n_neg: i32[],
           %n_one: i32[],
           %n_six: i32[]) -> (i_zero: i32[], y_zero: f32[4], i_neg: i32[], y_neg: f32[4], i_one: i32[], y_one: f32[4], i_six: i32[], y_six: f32[4]) {
  %z_zero = constant 0 : i32[]
  %i_zero, %m_zero, %y_zero = while @below, @grow(%z_zero, %n_zero, %x)
  %z_neg = constant 0 : i32[]
  %i_neg, %m_neg, %y_neg = while @below, @grow(%z_neg, %n_neg, %x)
  %z_one = constant 0 : i32[]
  %i_one, %m_one, %y_one = while @below, @grow(%z_one, %n_one, %x)
  %z_six = constant 0 : i32[]
  %i_six, %m_six, %y_six = while @below, @grow(%z_six, %n_six, %x)
  return %i_zero, %y_zero, %i_neg, %y_neg, %i_one, %y_one, %i_six, %y_six
}
