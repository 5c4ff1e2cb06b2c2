// test: error explain --auto-shard --axis-link modle=450:1
// --axis-link must name an axis of the mesh: a misspelt one would otherwise
// leave that axis on the default link without a word. One line, exit 2.
mesh [data=2, model=2]

func @main(%x: f32[8, 8], %w: f32[8, 8]) -> (y: f32[8, 8]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
