// test: error explain --auto-shard --axis-link model=450:1 --axis-link model=25:5
// An axis given two links is ambiguous: refused (exit 2), not the first or
// the last taken silently.
mesh [data=2, model=2]

func @main(%x: f32[8, 8], %w: f32[8, 8]) -> (y: f32[8, 8]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
