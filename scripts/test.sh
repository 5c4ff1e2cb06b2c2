#!/usr/bin/env bash
# Builds the whole workspace and runs every test. This is what CI runs (.ci/run).
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

if [ "$status" -ne 0 ]; then
  echo "test.sh: FAILED (cargo test exited with $status)" >&2
  echo "summary: $passed passed, $failed failed, $ignored skipped"
  exit 1
fi
echo "summary: $passed passed, $failed failed, $ignored skipped"
