#!/usr/bin/env bash
# The main job: build pjc and run the most complete pipeline that exists today:
# examples/mlp.pir is checked, formatted and evaluated on generated inputs (results
# checked against an independent recomputation); examples/mlp_train.pir (a training
# step written with grad) is compiled through sharding, partitioning, kernel planning
# and LLVM/PTX code generation, and trained for 5 SGD steps in the interpreter and
# under mpirun on 4 processes (the MPI runtime with JIT kernels, pjc-spmd-run).
# When the standalone executable exists (pjc compile -o), that becomes
# compile + mpirun ./model.bin.
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

# ---- training: grad + SGD, compiled view and interpreted steps ------------------------
TRAIN=examples/mlp_train.pir
say "pjc explain $TRAIN (the training step written with grad, on 4 data-parallel devices)"
"$PJC" explain "$TRAIN" >"$WORK/train.explain.txt" || die "pjc explain $TRAIN"
sed -n '/^collectives inserted/,$p' "$WORK/train.explain.txt"
# Only the gradients and the loss are all-reduced: 2(n-1)/n x (parameter bytes + 4).
grep -q "total: 5 collectives, 610626 B per device" "$WORK/train.explain.txt" \
  || die "unexpected communication for $TRAIN (see $WORK/train.explain.txt)"

say "pjc compile $TRAIN --emit spmd / plan / llvm / ptx (the per-device program and its kernels)"
"$PJC" compile "$TRAIN" --emit spmd >"$WORK/train.spmd.pir" || die "--emit spmd"
"$PJC" check "$WORK/train.spmd.pir" || die "the per-device program does not check"
"$PJC" compile "$TRAIN" --emit plan >"$WORK/train.plan.txt" || die "--emit plan"
"$PJC" compile "$TRAIN" --emit llvm >"$WORK/train.ll" || die "--emit llvm"
"$PJC" compile "$TRAIN" --emit ptx --gpu-arch sm_90 >"$WORK/train.ptx" || die "--emit ptx"
echo "per-device program: $(grep -c ' = ' "$WORK/train.spmd.pir") statements, $(grep -c 'all_reduce' "$WORK/train.spmd.pir") all_reduce"
echo "kernel plan: $(grep -c '^  kernel' "$WORK/train.plan.txt") fused kernels; $(tail -n 1 "$WORK/train.plan.txt" | sed 's/^ *//')"
echo "x86-64 LLVM IR: $(grep -c '^define' "$WORK/train.ll") kernel functions; PTX (sm_90): $(grep -c '^.visible .entry' "$WORK/train.ptx") kernels"

say "train 5 SGD steps with pjc eval, feeding the carried parameters back"
cp "$WORK/inputs/inputs.safetensors" "$WORK/state.safetensors"
losses=()
for s in 1 2 3 4 5; do
  "$PJC" eval "$TRAIN" --inputs "$WORK/inputs/inputs.safetensors" --inputs "$WORK/state.safetensors" \
    --output "$WORK/step.safetensors" || die "pjc eval $TRAIN (step $s)"
  mv "$WORK/step.safetensors" "$WORK/state.safetensors"
  loss=$(python3 -c "import sys; sys.path.insert(0, 'examples'); import make_inputs as m; print('%.6f' % m.read_safetensors(sys.argv[1])['loss'][2][0])" "$WORK/state.safetensors")
  echo "step $s: loss $loss"
  losses+=("$loss")
done
python3 -c "import sys; l=[float(x) for x in sys.argv[1:]]; sys.exit(0 if all(b < a for a, b in zip(l, l[1:])) else 1)" "${losses[@]}" \
  || die "the loss did not decrease at every step: ${losses[*]}"

say "train the same 5 steps under mpirun on 4 processes (the MPI runtime, JIT kernels per rank)"
cargo build --release -q -p pjc-runtime --bin pjc-spmd-run "${locked[@]}" || die "cargo build pjc-spmd-run"
RUN="${CARGO_TARGET_DIR:-target}/release/pjc-spmd-run"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
cp "$WORK/inputs/inputs.safetensors" "$WORK/mpi-state.safetensors"
for s in 1 2 3 4 5; do
  timeout 300 mpirun --oversubscribe -np 4 "$RUN" "$TRAIN" --inputs "$WORK/inputs/inputs.safetensors" \
    --inputs "$WORK/mpi-state.safetensors" --output "$WORK/mpi-step.safetensors" || die "mpirun step $s"
  mv "$WORK/mpi-step.safetensors" "$WORK/mpi-state.safetensors"
  loss=$(python3 -c "import sys; sys.path.insert(0, 'examples'); import make_inputs as m; print('%.6f' % m.read_safetensors(sys.argv[1])['loss'][2][0])" "$WORK/mpi-state.safetensors")
  want=${losses[$((s - 1))]}
  echo "step $s: loss $loss on 4 processes (pjc eval: $want)"
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-4 * abs(b) else 1)" "$loss" "$want" \
    || die "step $s: the 4-process loss $loss differs from pjc eval's $want"
done

echo
echo "main-job: OK: check, fmt, eval of $PROGRAM; $TRAIN compiled (sharded, partitioned, planned, LLVM/PTX) and trained 5 steps in pjc eval and under mpirun -np 4 (results in $WORK)"
