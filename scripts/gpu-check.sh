#!/usr/bin/env bash
# The GPU check: the same compiled executables run with --device cuda and with
# --device cpu on a machine with one NVIDIA GPU, outputs compared (with each
# other and with the expected outputs of the numeric cases) and timed.
#
#   bash scripts/gpu-check.sh prepare   # here (cargo, LLVM): builds gpu-bundle.tar.xz
#   bash scripts/gpu-check.sh run       # there (one GPU, no cargo, maybe no MPI)
#
# `prepare` compiles, for a one-device mesh (--mesh all ones): the numeric test
# cases of every op family (f32, plus the families without an f32 case), every
# program of tests/partition, examples/mlp.pir, the convolutions of
# tests/text/fusion/cudnn_routes.pir (cuDNN's three operations, grouped,
# NCHW, an integer fallback) and examples/mlp_train.pir (loop
# mode on a generated dataset); it bundles them with their inputs, the
# comparison script, and the shared libraries pjc-runner needs that a bare
# machine may lack (OpenMPI's), compressed together (the executables share the
# runner's bytes, so the bundle stays small).
#
# `run` unpacks the bundle, runs every program with --device cpu and --device
# cuda, compares, times, measures speed against the device's limits and JAX on
# the same GPU (scripts/gpu_perf.py: elementwise bandwidth, GEMM and
# convolution rates, a GPT block's tokens/s and MFU), and writes a report
# (markdown) to $OUT (or ./gpu-out).
# Multi-rank NCCL cannot run on a one-GPU machine (NCCL refuses two ranks on one
# GPU): collectives run over size-1 communicators only; multi-rank collectives
# are tested on the CPU path in CI.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${1:-}
BUNDLE=gpu-bundle
say() { echo "==> $*"; }
# timed LABEL CMD...: runs CMD and prints its wall time.
timed() {
  local label=$1 t0 rc
  shift
  t0=$(date +%s%N)
  "$@"
  rc=$?
  echo "$label: wall $(( ($(date +%s%N) - t0) / 1000000 )) ms, exit $rc"
  return $rc
}

prepare() {
  set -e
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
  cargo build --release -p pjc --locked
  local pjc=${CARGO_TARGET_DIR:-target}/release/pjc
  local runner=${CARGO_TARGET_DIR:-target}/release/pjc-runner
  rm -rf "$BUNDLE" "$BUNDLE.tar.xz"
  mkdir -p "$BUNDLE/progs" "$BUNDLE/lib"
  # Numeric cases: every f32 case, and one case of each family without f32
  # (one-device programs only: a machine with one GPU runs one process).
  python3 - "$BUNDLE/cases.txt" <<'EOF'
import os, re, sys
def devices(c):
    m = re.search(r"^mesh \[(.*)\]", open(f"tests/numeric/cases/{c}/prog.pir").read(), re.M)
    n = 1
    for size in re.findall(r"=(\d+)", m.group(1)) if m else []:
        n *= int(size)
    return n
cases = [c for c in sorted(os.listdir("tests/numeric/cases")) if devices(c) == 1]
fam = lambda c: re.sub(r"_(f32|f64|f16|bf16|i8|i16|i32|i64|u8|u16|u32|u64|pred|other)$", "", c)
have_f32 = {fam(c) for c in cases if c.endswith("_f32")}
pick = [c for c in cases if c.endswith("_f32")]
seen = set()
for c in cases:
    f = fam(c)
    if f not in have_f32 and f not in seen:
        seen.add(f)
        pick.append(c)
open(sys.argv[1], "w").write("\n".join(pick) + "\n")
print(f"{len(pick)} numeric cases of {len(cases)}")
EOF
  while read -r c; do
    local d="$BUNDLE/progs/num_$c"
    mkdir -p "$d"
    if ! "$pjc" compile "tests/numeric/cases/$c/prog.pir" -o "$d/prog.bin" 2>"$d/compile.err"; then
      echo "compile failed: $c: $(head -c 300 "$d/compile.err")"
      rm -rf "$d"
      continue
    fi
    cp tests/numeric/cases/"$c"/in_*.npy "$d/" 2>/dev/null || true
    mkdir -p "$d/expected"
    for f in tests/numeric/cases/"$c"/out_*.npy; do
      local n=$(basename "$f" .npy)
      cp "$f" "$d/expected/${n#out_}.npy"
    done
  done <"$BUNDLE/cases.txt"
  # Partition programs on one device, with generated inputs.
  for f in tests/partition/*.pir examples/mlp.pir tests/text/fusion/cudnn_routes.pir; do
    local n=$(basename "$f" .pir)
    local d="$BUNDLE/progs/prog_$n"
    mkdir -p "$d"
    local mesh
    mesh=$(sed -n 's/^mesh \[\(.*\)\].*/\1/p' "$f" | head -1 | sed 's/=[0-9]*/=1/g; s/ //g')
    if [ -n "$mesh" ]; then
      "$pjc" compile "$f" --mesh "$mesh" -o "$d/prog.bin"
    else
      "$pjc" compile "$f" -o "$d/prog.bin"
    fi
    "$pjc" compile "$f" ${mesh:+--mesh "$mesh"} --emit pir >"$d/prog.pir"
  done
  python3 scripts/gpu_compare.py inputs "$BUNDLE/progs"
  # Training in loop mode.
  local d="$BUNDLE/progs/train_mlp"
  mkdir -p "$d"
  "$pjc" compile examples/mlp_train.pir --mesh data=1 -o "$d/prog.bin"
  python3 examples/make_inputs.py gen "$d/init" >/dev/null
  python3 examples/make_inputs.py dataset "$d/data" 2048 >/dev/null
  rm -f "$d"/init/*.npy
  # The JAX examples (jax2pir exports) on one device, in loop mode: data and initial
  # parameters from each example's data.py (numpy: the JAX venv's Python).
  local py=python3
  [ -x .venv-jax/bin/python ] && py=.venv-jax/bin/python
  for spec in "jax_mlp mlp.pir x,labels" "jax_gpt gpt.pir tokens,targets" "jax_resnet resnet18_small.pir images,labels"; do
    read -r ex pir names <<<"$spec"
    d="$BUNDLE/progs/$ex"
    mkdir -p "$d"
    local mesh
    mesh=$(sed -n 's/^mesh \[\(.*\)\].*/\1/p' "examples/$ex/$pir" | head -1 | sed 's/=[0-9]*/=1/g; s/ //g')
    "$pjc" compile "examples/$ex/$pir" ${mesh:+--mesh "$mesh"} -o "$d/prog.bin"
    "$py" "examples/$ex/data.py" "$d" >/dev/null
    echo "$names" >"$d/data-names"
  done
  # A GEMM-bound loop for timing: a 2048x2048 f32 product per step.
  d="$BUNDLE/progs/bench_matmul"
  mkdir -p "$d"
  cat >"$d/prog.pir" <<'PIR'
func @main(%a: f32[2048,2048], %b: f32[2048,2048]) -> (a: f32[2048,2048], s: f32[]) {
  %c = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[2048,2048]
  %k = constant 0.02 : f32[2048,2048]
  %d = mul %c, %k
  %a2 = tanh %d
  %s = reduce %a2 {dims=[0,1], kind=sum} : f32[]
  return %a2, %s
}
PIR
  "$pjc" compile "$d/prog.pir" -o "$d/prog.bin"
  python3 scripts/gpu_compare.py inputs "$BUNDLE/progs"
  cp scripts/gpu_compare.py "$BUNDLE/"
  # Speed against the device's limits and JAX (scripts/gpu_perf.py).
  python3 scripts/gpu_perf.py prepare --pjc "$pjc" "$BUNDLE/perf"
  cp scripts/gpu_perf.py "$BUNDLE/"
  # OpenMPI's libraries (pjc-runner links libmpi; a one-device run never calls MPI_Init).
  ldd "$runner" | awk '/=> \// {print $3}' | grep -E 'libmpi|libopen-|libpmix|libhwloc|libevent|libprrte|libudev|libz\.' \
    | while read -r l; do cp -L "$l" "$BUNDLE/lib/"; done
  python3 - <<'EOF'
import lzma, tarfile
with tarfile.open("gpu-bundle.tar.xz", "w:xz", preset=6) as t:
    t.add("gpu-bundle")
EOF
  rm -rf "$BUNDLE"
  ls -l "$BUNDLE.tar.xz"
}

run() {
  local out=${OUT:-$PWD/gpu-out}
  mkdir -p "$out"
  exec > >(tee "$out/gpu-check.log") 2>&1
  say "machine"
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  ldconfig -p | grep -E 'libmpi\.|libcublas\.|libnccl\.|libcudnn\.' | head
  local work=/tmp/pjc-gpu-check
  rm -rf "$work" && mkdir -p "$work"
  python3 -c "import tarfile; tarfile.open('$BUNDLE.tar.xz').extractall('$work')" || { echo "no $BUNDLE.tar.xz"; exit 2; }
  local b=$work/$BUNDLE
  if ldd "$b/progs/prog_mlp/prog.bin" | grep -q "not found"; then
    export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "using the carried OpenMPI libraries"
  fi
  ldd "$b/progs/prog_mlp/prog.bin" | grep -E "not found|mpi" || true
  say "devices (--list-devices) and one CUDA run"
  timeout 60 "$b/progs/prog_mlp/prog.bin" --list-devices
  timeout 120 "$b/progs/prog_mlp/prog.bin" --device cuda --inputs "$b/progs/prog_mlp/inputs.safetensors" --output "$work/probe.safetensors"
  echo "exit $?"
  say "every program: --device cpu, --device cuda, compared"
  python3 scripts/gpu_compare.py run "$b/progs" "$out/gpu-check.md"
  local rc=$?
  say "cuDNN: the convolutions of cudnn_routes.pir on CUDA (the trace's cudnn steps), against the CPU above"
  local c=$b/progs/prog_cudnn_routes
  timeout 120 "$c/prog.bin" --device cuda --inputs "$c/inputs.safetensors" --output "$work/cudnn.safetensors" --trace "$work/cudnn_trace.json"
  python3 "$b/gpu_perf.py" routes "$work/cudnn_trace.json" 6 | tee -a "$out/gpu-check.md"
  say "training: examples/mlp_train.pir (mesh data=1), 300 steps on 2048 examples"
  local t=$b/progs/train_mlp
  for dev in cpu cuda; do
    timed "$dev" timeout 300 "$t/prog.bin" --device "$dev" --inputs "$t/init/inputs.safetensors" \
      --data "x=$t/data/train_x.npy" --data "labels=$t/data/train_labels.npy" --steps 300 --log-every 100 \
      --output "$work/train_$dev.safetensors" 2>&1 | tee "$work/train_$dev.log"
  done
  python3 scripts/gpu_compare.py pair "$work/train_cpu.safetensors" "$work/train_cuda.safetensors" | tee -a "$out/gpu-check.md"
  { echo; echo '```'; cat "$work/train_cpu.log" "$work/train_cuda.log"; echo '```'; } >>"$out/gpu-check.md"
  say "JAX examples (jax2pir exports, one device): 10 training steps, --device cpu vs cuda"
  { echo; echo "JAX examples on one device, 10 steps (final parameters and loss, CUDA vs CPU):"; } >>"$out/gpu-check.md"
  for j in "$b"/progs/jax_*; do
    local args=()
    for f in "$j"/*.safetensors; do args+=(--inputs "$f"); done
    IFS=, read -r -a names <"$j/data-names"
    for n in "${names[@]}"; do args+=(--data "$n=$j/$n.npy"); done
    for dev in cpu cuda; do
      timed "$(basename "$j") $dev" timeout 300 "$j/prog.bin" --device "$dev" "${args[@]}" --steps 10 --log-every 5 \
        --output "$work/$(basename "$j")_$dev.safetensors" 2>&1 | tee -a "$out/gpu-check.md"
    done
    echo "$(basename "$j"):" >>"$out/gpu-check.md"
    python3 scripts/gpu_compare.py pair "$work/$(basename "$j")_cpu.safetensors" "$work/$(basename "$j")_cuda.safetensors" | tee -a "$out/gpu-check.md"
  done
  say "timing: 2048x2048 f32 product + tanh + sum, 50 steps in loop mode"
  local m=$b/progs/bench_matmul
  { echo; echo "bench_matmul (50 steps of a 2048^3 f32 GEMM + tanh + sum):"; echo '```'; } >>"$out/gpu-check.md"
  for dev in cpu cuda; do
    timed "$dev" timeout 300 "$m/prog.bin" --device "$dev" --inputs "$m/inputs.safetensors" --steps 50 --log-every 25 \
      --output "$work/bench_$dev.safetensors" 2>&1 | tee -a "$out/gpu-check.md"
  done
  echo '```' >>"$out/gpu-check.md"
  python3 scripts/gpu_compare.py pair "$work/bench_cpu.safetensors" "$work/bench_cuda.safetensors" | tee -a "$out/gpu-check.md"
  say "speed: elementwise bandwidth, GEMM f32/bf16, 3x3 convolutions (forward, input and kernel gradient), a GPT block, a ResNet-50 training step, pjc against JAX on this GPU"
  # The GPU machine's Python has JAX for CUDA (JAX_PYTHON overrides).
  timeout 1200 python3 "$b/gpu_perf.py" run "$b/perf" --device cuda --python "${JAX_PYTHON:-python3}" --out "$out/gpu-check.md" \
    || echo "gpu_perf.py failed: exit $?"
  say "report: $out/gpu-check.md"
  cat "$out/gpu-check.md"
  exit $rc
}

case "$mode" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
