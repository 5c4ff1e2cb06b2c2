#!/usr/bin/env bash
# The main job: build pjc and run the most complete pipeline that exists today on
# examples/mlp.pir (check, fmt, eval on generated inputs, and a check of the results
# against an independent recomputation). Later this becomes compile + mpirun.
#
# Work files go to $PJC_WORK (default /tmp/pjc-main-job), emptied at the start.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROGRAM=examples/mlp.pir
WORK=${PJC_WORK:-/tmp/pjc-main-job}
step=0
say() { step=$((step + 1)); echo; echo "==> [$step] $*"; }
die() { echo "main-job: FAILED: $*" >&2; exit 1; }

say "setup"
bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

say "build pjc (release)"
locked=()
if [ -f Cargo.lock ]; then locked=(--locked); fi
cargo build --release -p pjc "${locked[@]}" || die "cargo build --release -p pjc"
PJC="${CARGO_TARGET_DIR:-target}/release/pjc"
[ -x "$PJC" ] || die "the build did not produce $PJC"
echo "built $PJC"

rm -rf "$WORK"
mkdir -p "$WORK"

say "pjc check $PROGRAM"
"$PJC" check "$PROGRAM" || die "pjc check rejected $PROGRAM"
echo "valid"

say "pjc fmt $PROGRAM (and fmt of its own output must be identical)"
"$PJC" fmt "$PROGRAM" >"$WORK/mlp.fmt.pir" || die "pjc fmt $PROGRAM"
"$PJC" fmt "$WORK/mlp.fmt.pir" >"$WORK/mlp.fmt2.pir" || die "pjc fmt of its own output"
diff -u "$WORK/mlp.fmt.pir" "$WORK/mlp.fmt2.pir" || die "pjc fmt is not idempotent (diff above)"
"$PJC" check "$WORK/mlp.fmt.pir" || die "the formatted program does not check"
cat "$WORK/mlp.fmt.pir"

say "generate inputs (deterministic, float32)"
python3 examples/make_inputs.py gen "$WORK/inputs"

say "pjc eval with one --input per parameter (.npy), output as a directory of .npy"
inputs=()
for name in x labels w1 b1 w2 b2; do
  inputs+=(--input "$name=$WORK/inputs/$name.npy")
done
"$PJC" eval "$PROGRAM" "${inputs[@]}" --output "$WORK/out" || die "pjc eval (.npy inputs)"
ls -l "$WORK/out"
python3 examples/make_inputs.py check "$WORK/inputs" "$WORK/out" || die "wrong results in $WORK/out"

say "pjc eval with --inputs (.safetensors), output as .safetensors"
"$PJC" eval "$PROGRAM" --inputs "$WORK/inputs/inputs.safetensors" --output "$WORK/out.safetensors" \
  || die "pjc eval (.safetensors inputs)"
ls -l "$WORK/out.safetensors"
python3 examples/make_inputs.py check "$WORK/inputs" "$WORK/out.safetensors" \
  || die "wrong results in $WORK/out.safetensors"

echo
echo "main-job: OK: check, fmt, and eval of $PROGRAM (results in $WORK)"
