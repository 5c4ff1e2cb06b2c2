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
. scripts/jax-bench-env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$VENV/bin/python" scripts/bench_jax.py --pjc "$PWD/target/release/pjc" "$@"
