// test: explain
// A dimension split over two axes (data, model) and a 2-D split: the tile
// pictures show which device ids hold each block (row-major device order).
mesh [data=2, model=3]

func @main(%x: f32[12] on [(data, model)], %y: f32[4,6] on [data, model]) -> (a: f32[12] on [(data, model)], b: f32[4,6] on [data, model]) {
  %a = neg %x
  %b = exp %y
  return %a, %b
}
