#!/usr/bin/env bash
# Compile time, pjc against JAX/XLA on this machine (issue 17, item 7): `pjc compile -o`
# cold (an empty compile cache) and warm, `pjc compile --emit spmd`, plan kernel counts,
# and XLA's lower + compile in a fresh process, for the examples/jax_* training steps,
# the real-size programs of bench-steps.sh and layer stacks of 1k-10k PIR ops
# (benches/compile/gen_stack.py). Writes docs/benchmarks-compile.md
# (scripts/bench_compile.py says exactly what is timed).
#
#   bash scripts/bench-compile.sh [--only stack,jax_mlp] [--runs 2]
#   bash scripts/bench-compile.sh --quick    # jax_mlp and the 1k stack; /tmp/benchmarks-compile-quick.md
#
# Uses the pinned JAX of scripts/test-jax.sh (.venv-jax, created on first use) and a
# release build of pjc. A benchmark, never a test: nothing here fails on slowness.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/jax-bench-env.sh
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$VENV/bin/python" scripts/bench_compile.py --pjc "$PWD/target/release/pjc" "$@"
