#!/usr/bin/env bash
# Builds the whole workspace and runs every test — the Rust tests, then the JAX bridge's
# (scripts/test-jax.sh: installs pinned JAX for the CPU into .venv-jax on first use).
# This is what CI runs (.ci/run).
# Exits non-zero on any failure; the last line says what happened.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

# setup.sh checked that cargo exists; it may live in ~/.cargo/bin, off a non-login PATH.
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if [ "${CI:-}" = "true" ]; then
  export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
fi

# Build exactly the committed dependency versions when a lock file is committed.
locked=()
if [ -f Cargo.lock ]; then locked=(--locked); fi

# ptxas and libdevice (CUDA's compiler from PyPI, no GPU needed) for the NVPTX tests.
echo "==> scripts/ptxas.sh"
PJC_PTXAS=$(bash scripts/ptxas.sh)
export PJC_PTXAS

# No import circles among the modules of any crate (ARCHITECTURE.md's layering).
echo "==> scripts/module-cycles.py"
if ! python3 scripts/module-cycles.py; then
  echo "test.sh: FAILED: import circles (above); break them before landing" >&2
  exit 1
fi

echo "==> cargo build --workspace ${locked[*]}"
if ! cargo build --workspace "${locked[@]}"; then
  echo "test.sh: FAILED: cargo build --workspace did not succeed" >&2
  exit 1
fi

echo "==> cargo test --workspace --no-fail-fast ${locked[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --no-fail-fast "${locked[@]}" 2>&1 | tee "$log" || status=$?

# Add up cargo's per-binary "test result: ok. N passed; M failed; ..." lines.
read -r passed failed ignored < <(awk '
  /^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed;?$/) p += $i
      if ($(i+1) ~ /^failed;?$/) f += $i
      if ($(i+1) ~ /^ignored;?$/) g += $i
    }
  }
  END { printf "%d %d %d\n", p, f, g }' "$log")

# The JAX bridge: jax2pir against JAX itself (pinned JAX for the CPU in .venv-jax),
# using the pjc just built.
echo "==> scripts/test-jax.sh"
jax_status=0
jlog=$(mktemp)
trap 'rm -f "$log" "$jlog"' EXIT
PJC="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/pjc" bash scripts/test-jax.sh 2>&1 | tee "$jlog" || jax_status=$?
read -r jpassed jfailed < <(sed -n 's/^jax: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$jlog" | tail -n 1)
passed=$((passed + ${jpassed:-0}))
failed=$((failed + ${jfailed:-0}))

if [ "$status" -ne 0 ]; then
  echo "test.sh: FAILED (cargo test exited with $status)" >&2
  echo "summary: $passed passed, $failed failed, $ignored skipped"
  exit 1
fi
if [ "$jax_status" -ne 0 ] || [ -z "${jpassed:-}" ]; then
  echo "test.sh: FAILED (scripts/test-jax.sh exited with $jax_status)" >&2
  echo "summary: $passed passed, $failed failed, $ignored skipped"
  exit 1
fi
echo "summary: $passed passed, $failed failed, $ignored skipped"
