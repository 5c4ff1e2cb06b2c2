#!/usr/bin/env bash
# Solve time of `pjc explain --auto-shard` on GPT-style stacks (benches/autoshard/gen_gpt.py:
# d_model 512, seq 256, batch 8, mesh [data=2, model=2]), release build:
#
#   cargo build --release -p pjc && bash benches/autoshard/run.sh [LAYERS...]   # default: 6 12 24
#
# Per program: the wall time of `explain` with and without --auto-shard (their difference
# is the auto-sharding stage: inlining, the cost model, the ILPs), and the solver's lines.
# TRAIN=1 times the SGD training steps instead of the forward passes; LIMIT=S passes
# --auto-shard-time S (default 10, pjc's default).
set -euo pipefail
cd "$(dirname "$0")/../.."
PJC=target/release/pjc
DIR=${DIR:-$(mktemp -d)}
LIMIT=${LIMIT:-10}
train=(); [[ "${TRAIN:-0}" == 1 ]] && train=(--train)
for layers in "${@:-6 12 24}"; do
  for l in $layers; do
    f=$DIR/gpt$l${train:+_train}.pir
    python3 benches/autoshard/gen_gpt.py --layers "$l" "${train[@]}" > "$f"
    t0=$(date +%s.%N); $PJC explain "$f" > /dev/null; t1=$(date +%s.%N)
    $PJC explain "$f" --auto-shard --auto-shard-time "$LIMIT" > "$f.explain" 2> "$f.err" || true
    t2=$(date +%s.%N)
    printf '%s layers%s: explain %.2f s, explain --auto-shard %.2f s (auto-shard ~%.2f s)\n' "$l" \
      "${train:+ (training step)}" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(echo "$t2 - $t1 - ($t1 - $t0)" | bc)"
    sed -n '2,3p;4p;6p' "$f.explain" | grep -E "solver|stopped|no plan|chosen|runner-up" | sed 's/^/    /'
    cat "$f.err" | sed 's/^/    /'
  done
done
