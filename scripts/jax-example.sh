#!/usr/bin/env bash
# Runs one JAX example end to end (each examples/jax_*/run.sh calls this):
#   1. export the JAX training step to PIR with jax2pir (when JAX is importable; otherwise
#      the committed .pir is used),
#   2. make the synthetic data and initial parameters (the example's data.py, numpy),
#   3. pjc compile -o, and
#   4. train under mpirun --oversubscribe -np NPROC in loop mode on the CPU.
#
# usage: scripts/jax-example.sh EXAMPLE_DIR FUNCTION PIR_FILE NPROC STEPS DATA_NAME...
# env:   PJC (default target/release/pjc, built if missing), PYTHON (default .venv-jax/bin/python
#        when it exists, else python3; needs numpy), WORK (default /tmp/pjc-EXAMPLE),
#        LOG_EVERY (default 1), MPIRUN_ARGS (extra mpirun flags)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 6 ] || { sed -n '2,13p' "$0"; exit 2; }
DIR=$(cd "$1" && pwd); FN=$2; PIR=$3; NPROC=$4; STEPS=$5; shift 5
NAME=$(basename "$DIR")
WORK=${WORK:-/tmp/pjc-$NAME}
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  if [ -x "$ROOT/.venv-jax/bin/python" ]; then PYTHON=$ROOT/.venv-jax/bin/python; else PYTHON=python3; fi
fi
PJC=${PJC:-$ROOT/target/release/pjc}
die() { echo "$NAME: FAILED: $*" >&2; exit 1; }
say() { echo "==> $*"; }
elapsed() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.2f", t1 - t0 }'; }

mkdir -p "$WORK"
rm -f "$WORK"/*.safetensors "$WORK"/*.npy
if [ ! -x "$PJC" ]; then
  say "building pjc (cargo build --release -p pjc)"
  (cd "$ROOT" && cargo build --release -p pjc) || die "cargo build"
fi

program=$DIR/$PIR
if PYTHONPATH=$ROOT/python "$PYTHON" -c "import jax" 2>/dev/null; then
  say "export $NAME/model.py:$FN with jax2pir"
  t0=$(date +%s.%N)
  PYTHONPATH=$ROOT/python "$PYTHON" -m jax2pir "$DIR/model.py:$FN" -o "$WORK/$PIR" || die "jax2pir export"
  echo "exported in $(elapsed "$t0") s: $(grep -c ' = ' "$WORK/$PIR") statements"
  if ! cmp -s "$WORK/$PIR" "$program"; then
    echo "note: the export differs from the committed $NAME/$PIR (another JAX version?); using the new one"
  fi
  program=$WORK/$PIR
else
  say "JAX is not importable by $PYTHON: using the committed $NAME/$PIR"
fi
"$PJC" check "$program" || die "pjc check $program"

say "synthetic data and initial parameters"
"$PYTHON" "$DIR/data.py" "$WORK" || die "$NAME/data.py"

say "pjc compile $PIR -o $WORK/model.bin"
t0=$(date +%s.%N)
"$PJC" compile "$program" -o "$WORK/model.bin" || die "pjc compile"
echo "compiled in $(elapsed "$t0") s"

say "mpirun --oversubscribe -np $NPROC model.bin (loop mode, $STEPS steps, CPU)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
args=()
for f in "$WORK"/*.safetensors; do case $f in *.out.safetensors) ;; *) args+=(--inputs "$f");; esac; done
for d in "$@"; do args+=(--data "$d=$WORK/$d.npy"); done
# shellcheck disable=SC2086
mpirun --oversubscribe -np "$NPROC" ${MPIRUN_ARGS:-} "$WORK/model.bin" "${args[@]}" --steps "$STEPS" \
  --log-every "${LOG_EVERY:-1}" --device "${DEVICE:-cpu}" --output "$WORK/trained.out.safetensors" || die "mpirun"
echo "$NAME: OK: trained parameters in $WORK/trained.out.safetensors"
