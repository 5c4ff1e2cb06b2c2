#!/usr/bin/env bash
# Code generation benchmark (not a test): generated CPU kernels in GB/s next to
# this machine's memcpy bandwidth (a fused 5-op elementwise chain and a row
# softmax on 16M f32), a 1024^3 f32 matmul through the GEMM library step, and an
# MLP training step with JIT kernels vs the reference interpreter (`pjc eval`'s
# engine). Prints a Markdown table; docs/benchmarks-codegen.md holds the last
# committed run.
#   bash scripts/bench-codegen.sh            # full sizes
#   bash scripts/bench-codegen.sh --quick    # smaller, for a smoke test
# PJC_THREADS=N sets the threads per kernel (default: all cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LLVM_SYS_221_PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"
cargo run --release -q -p pjc-codegen --example bench -- "$@"
