#!/usr/bin/env bash
# ResNet-50 at 224x224 (batch 8 on [data=4]): export (if JAX is present), then
# pjc explain (every collective and why), pjc compile --emit plan, and pjc compile -o,
# each timed. Training it on a CPU is too slow for CI; on GPUs run the executable with
# the flags of examples/jax_resnet/run.sh (and --device cuda).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PJC=${PJC:-$ROOT/target/release/pjc}
WORK=${WORK:-/tmp/pjc-jax_resnet50}
PYTHON=${PYTHON:-$([ -x "$ROOT/.venv-jax/bin/python" ] && echo "$ROOT/.venv-jax/bin/python" || echo python3)}
mkdir -p "$WORK"
[ -x "$PJC" ] || (cd "$ROOT" && cargo build --release -p pjc)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

program=$HERE/resnet50.pir
if PYTHONPATH=$ROOT/python "$PYTHON" -c "import jax" 2>/dev/null; then
  t=$(now)
  PYTHONPATH=$ROOT/python "$PYTHON" -m jax2pir "$HERE/model.py:train_step_resnet50" -o "$WORK/resnet50.pir"
  echo "export: $(secs "$t") s, $(grep -c ' = ' "$WORK/resnet50.pir") statements, $(wc -c <"$WORK/resnet50.pir") bytes"
  cmp -s "$WORK/resnet50.pir" "$program" || echo "note: differs from the committed resnet50.pir (another JAX version?); using the new one"
  program=$WORK/resnet50.pir
fi
t=$(now); "$PJC" check "$program"; echo "pjc check: $(secs "$t") s"
t=$(now); "$PJC" explain "$program" >"$WORK/explain.txt"; echo "pjc explain: $(secs "$t") s"
t=$(now); "$PJC" compile "$program" --emit plan >"$WORK/plan.txt"; echo "pjc compile --emit plan: $(secs "$t") s"
t=$(now); "$PJC" compile "$program" -o "$WORK/resnet50.bin"; echo "pjc compile -o: $(secs "$t") s, $(wc -c <"$WORK/resnet50.bin") bytes"
echo
echo "collectives (pjc explain), by kind and reason:"
sed -n '/^collectives inserted/,/^  total/p' "$WORK/explain.txt" | grep -v '^collectives\|^  total' \
  | awk '{ kind=$2; $1=$2=$3=$4=$5=$6=""; sub(/^ */, ""); gsub(/%t[0-9.]+/, "%v"); print kind ": " $0 }' | sort | uniq -c
grep '^  total\|^kernel plan\|^peak memory' "$WORK/explain.txt"
