#!/usr/bin/env bash
# The main job: build pjc and run the most complete pipeline that exists today:
# examples/mlp.pir is checked, formatted and evaluated on generated inputs (results
# checked against an independent recomputation); examples/mlp_train.pir (a training
# step written with grad) is compiled through sharding, partitioning, kernel planning
# and LLVM/PTX code generation, and trained for 5 SGD steps in the interpreter and
# as a standalone executable (pjc compile -o) under mpirun -np 4 in loop mode, and
# finally trained for 64 steps on a 512-example dataset with checkpoints, then resumed on
# 2 processes (a recompiled --mesh data=2) up to step 96 with a trace.
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

say "libdevice and ptxas for the GPU code (CUDA's compiler from PyPI into .venv; no GPU needed)"
# --emit ptx and the executables' PTX need libdevice (math functions on NVPTX);
# scripts/ptxas.sh installs it on first use and prints where ptxas is.
PJC_PTXAS=$(bash scripts/ptxas.sh) || die "scripts/ptxas.sh could not install ptxas/libdevice"
export PJC_PTXAS
echo "ptxas: $PJC_PTXAS"

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

say "pjc compile $TRAIN -o $WORK/mlp_train.bin (a standalone executable: runtime + per-device program + kernels)"
"$PJC" compile "$TRAIN" -o "$WORK/mlp_train.bin" || die "pjc compile -o"
ls -l "$WORK/mlp_train.bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
loss_of() {
  python3 -c "import sys; sys.path.insert(0, 'examples'); import make_inputs as m; print('%.6f' % m.read_safetensors(sys.argv[1])['loss'][2][0])" "$1"
}

say "train the same 5 steps under mpirun -np 4 ./mlp_train.bin (loop mode; the batch is the whole 64-example dataset)"
timeout 300 mpirun --oversubscribe -np 4 "$WORK/mlp_train.bin" --inputs "$WORK/inputs/inputs.safetensors" \
  --data "x=$WORK/inputs/x.npy" --data "labels=$WORK/inputs/labels.npy" --steps 5 --log-every 1 --device cpu \
  --output "$WORK/mpi-5.safetensors" | tee "$WORK/mpi-5.log" || die "mpirun -np 4 mlp_train.bin --steps 5"
for s in 1 2 3 4 5; do
  loss=$(sed -n "s/^step $s\/5: loss=\([0-9.]*\).*/\1/p" "$WORK/mpi-5.log")
  want=${losses[$((s - 1))]}
  [ -n "$loss" ] || die "step $s: no loss logged"
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-4 * abs(b) else 1)" "$loss" "$want" \
    || die "step $s: the 4-process loss $loss differs from pjc eval's $want"
  echo "step $s: loss $loss on 4 processes = pjc eval's $want (rtol 1e-4)"
done

say "train 64 steps on a 512-example dataset (batch 64 split over 4 processes, 8 passes)"
python3 examples/make_inputs.py dataset "$WORK/data" 512
timeout 600 mpirun --oversubscribe -np 4 "$WORK/mlp_train.bin" --inputs "$WORK/inputs/inputs.safetensors" \
  --data "x=$WORK/data/train_x.npy" --data "labels=$WORK/data/train_labels.npy" --steps 64 --log-every 8 \
  --output "$WORK/trained.safetensors" | tee "$WORK/train.log" || die "mpirun -np 4 mlp_train.bin --steps 64"
first=$(sed -n 's/^step 8\/64: loss=\([0-9.]*\).*/\1/p' "$WORK/train.log")
last=$(loss_of "$WORK/trained.safetensors")
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < 0.5 * float(sys.argv[1]) else 1)" "$first" "$last" \
  || die "training did not lower the loss enough: step 8 $first, step 64 $last"
echo "loss: step 8 $first -> step 64 $last; trained parameters in $WORK/trained.safetensors"

say "checkpoints every 16 steps, then resume on 2 processes (recompiled with --mesh data=2) up to step 96, with a trace"
"$PJC" compile "$TRAIN" --mesh data=2 -o "$WORK/mlp_train2.bin" || die "pjc compile --mesh data=2 -o"
timeout 600 mpirun --oversubscribe -np 4 "$WORK/mlp_train.bin" --inputs "$WORK/inputs/inputs.safetensors" \
  --data "x=$WORK/data/train_x.npy" --data "labels=$WORK/data/train_labels.npy" --steps 64 --log-every 32 \
  --checkpoint "$WORK/ck" --checkpoint-every 16 --keep 2 | tee "$WORK/ck.log" || die "training with checkpoints"
ls "$WORK/ck"
timeout 600 mpirun --oversubscribe -np 2 "$WORK/mlp_train2.bin" --inputs "$WORK/inputs/inputs.safetensors" \
  --data "x=$WORK/data/train_x.npy" --data "labels=$WORK/data/train_labels.npy" --steps 96 --log-every 16 \
  --checkpoint "$WORK/ck" --resume --trace "$WORK/trace.json" --output "$WORK/resumed.safetensors" 2>&1 | tee "$WORK/resume.log" \
  || die "resume on 2 processes"
grep -q "resuming from '$WORK/ck/step-00000064' (step 64 of 96, written by 4 processes" "$WORK/resume.log" || die "did not resume from step 64"
resumed=$(loss_of "$WORK/resumed.safetensors")
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) else 1)" "$last" "$resumed" \
  || die "the loss did not keep falling after the resume: step 64 $last, step 96 $resumed"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('trace: %d events on %d ranks (open it in Perfetto)' % (len(d['traceEvents']), len({e['pid'] for e in d['traceEvents']})))" "$WORK/trace.json"
echo "loss: step 64 $last (4 processes) -> step 96 $resumed (2 processes, resumed from the checkpoint)"

echo
echo "main-job: OK: check, fmt, eval of $PROGRAM; $TRAIN compiled (sharded, partitioned, planned, LLVM/PTX, -o executable) and trained under mpirun -np 4: 5 steps equal to pjc eval, 64 steps lowering the loss, checkpointed and resumed on 2 processes to step 96 (results in $WORK)"
