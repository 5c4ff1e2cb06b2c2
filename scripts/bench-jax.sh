#!/usr/bin/env bash
# pjc against JAX/XLA on this machine (issue 9's benchmark): compile time, CPU step time
# (the executable under mpirun -np N against jax.jit on N host devices) and collective
# bytes per device, for every examples/jax_* training step. Writes docs/benchmarks.md.
#
#   bash scripts/bench-jax.sh [--steps 40] [--only jax_gpt]
#
# Uses the pinned JAX of scripts/test-jax.sh (.venv-jax, created on first use) and a
# release build of pjc. A benchmark, never a test: nothing here fails on slowness.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
cargo build --release -p pjc
VENV=${JAX_VENV:-.venv-jax}
if ! "$VENV/bin/python" -c "import jax, jax2pir" 2>/dev/null; then
  # test-jax.sh creates the venv and installs jax2pir; its tests are not needed here.
  PJC="$PWD/target/release/pjc" bash scripts/test-jax.sh -k no-such-test >/dev/null || true
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$VENV/bin/python" scripts/bench_jax.py --pjc "$PWD/target/release/pjc" "$@"
