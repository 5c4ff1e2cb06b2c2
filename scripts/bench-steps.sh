#!/usr/bin/env bash
# Step time at the sizes users train, pjc against JAX/XLA in the same run (issue 15):
# GEMM GFLOP/s against numpy; a GPT block's forward pass; ResNet-50 at 224x224 (forward
# and a training step), an MLP 784-2048-2048-10 and a small CNN training step, written in
# JAX and exported by jax2pir, on one process against jax.jit; and the MLP and the GPT
# block on 2 processes (mpirun -np 2, mesh [data=2]) against 2 host devices. Writes
# docs/benchmarks-steps.md (scripts/bench_steps.py says exactly what is timed).
#
#   bash scripts/bench-steps.sh [--steps 8] [--only gemm,gpt,resnet50,mlp,convnet,dp2]
#   bash scripts/bench-steps.sh --quick     # reduced sizes, 3 steps, a few minutes: checks
#                                           # the script; writes /tmp/benchmarks-steps-quick.md
#
# Uses the pinned JAX of scripts/test-jax.sh (.venv-jax, created on first use) and a
# release build of pjc. A benchmark, never a test: nothing here fails on slowness.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
bash scripts/setup.sh
cargo build --release -p pjc -p pjc-host --bins --example gemm_gflops
VENV=${JAX_VENV:-.venv-jax}
if ! "$VENV/bin/python" -c "import jax, numpy" 2>/dev/null; then
  PJC="$PWD/target/release/pjc" bash scripts/test-jax.sh -k no-such-test >/dev/null || true
fi
python3 scripts/bench_steps.py --pjc "$PWD/target/release/pjc" \
  --gemm-bench "$PWD/target/release/examples/gemm_gflops" --python "$VENV/bin/python" "$@"
