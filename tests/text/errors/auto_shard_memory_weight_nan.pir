// test: error explain --auto-shard --memory-weight nan
// A memory weight must be a number >= 0: refused (exit 2), not a NaN
// objective handed to the solver.
mesh [data=2, model=2]

func @main(%x: f32[8, 8], %w: f32[8, 8]) -> (y: f32[8, 8]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
