# Sourced by the JAX-side benchmarks (bench-jax.sh, bench-compile.sh): from the
# repository root, a release build of pjc and the pinned JAX of
# scripts/test-jax.sh (.venv-jax, or $JAX_VENV; created on first use). Sets VENV.
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
cargo build --release -p pjc
VENV=${JAX_VENV:-.venv-jax}
if ! "$VENV/bin/python" -c "import jax, jax2pir" 2>/dev/null; then
  # test-jax.sh creates the venv and installs jax2pir; its tests are not needed here.
  PJC="$PWD/target/release/pjc" bash scripts/test-jax.sh -k no-such-test >/dev/null || true
fi
