#!/usr/bin/env bash
# Collective-insertion benchmark (not a test): for each program and mesh, the
# collectives the SPMD partitioner inserts and the bytes each device sends
# (ring formulas). Prints a Markdown table; docs/benchmarks-partition.md holds
# the last committed run.
#   bash scripts/bench-partition.sh > docs/benchmarks-partition.md.new
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release -q -p pjc
pjc="${CARGO_TARGET_DIR:-target}/release/pjc"
b=benches/partition

runs=(
  "MLP training step, data parallel|$b/mlp_train_dp.pir|data=4"
  "MLP training step, data parallel|$b/mlp_train_dp.pir|data=8"
  "Megatron MLP forward|$b/megatron_mlp.pir|data=2,model=2"
  "Megatron MLP forward|$b/megatron_mlp.pir|data=4,model=2"
  "Transformer block (Megatron)|$b/transformer_block.pir|data=2,model=2"
  "Transformer block (Megatron)|$b/transformer_block.pir|data=4,model=2"
  "Conv net forward, data parallel|$b/conv_dp_forward.pir|data=8"
)

echo "| program | mesh | collectives inserted | bytes per device |"
echo "|---|---|---|---:|"
for r in "${runs[@]}"; do
  IFS='|' read -r title file mesh <<<"$r"
  out=$("$pjc" explain "$file" --mesh "$mesh" | sed -n '/^collectives inserted/,$p')
  # One "op over [axes]" per collective, counted.
  list=$(echo "$out" | awk '$1 ~ /^%/ { print $2 " over " $4 " " $5 }' | sed 's/ B$//' |
    awk '{ k = $1 " " $2 " " $3; c[k]++ } END { for (k in c) printf "%s%d× %s", (n++ ? ", " : ""), c[k], k }')
  total=$(echo "$out" | awk '/total:/ { print $(NF-3) }')
  [ -n "$list" ] || list="none"
  [ -n "$total" ] || total=0
  echo "| $title (\`$(basename "$file")\`) | \`$mesh\` | $list | $total |"
done
