#!/usr/bin/env bash
# The JAX bridge's tests: jax2pir exports compared with JAX (tests/jax/run.py).
#
# Creates (or reuses) the virtual environment .venv-jax (gitignored) with pinned JAX for
# the CPU, numpy, optax, Flax (the examples/jax_flax model: nn.scan, nn.Dropout; the
# exact Flax release for jax 0.10.2, its own dependencies resolved by pip alongside the
# JAX pins) and dm-haiku (the examples/jax_haiku model: hk.layer_stack, hk.dropout;
# 0.0.17, the newest release, imports and runs with jax 0.10.2), installs ./python
# (jax2pir) into it, builds pjc (release)
# when target/release/pjc is missing, and runs tests/jax/run.py, which exits non-zero on
# any failure (its last line: "jax: N passed, N failed").
#
# Measured on the project's 2-core machine: installing the pins below into a fresh venv
# took 53 s (downloads included) and the venv was 628 MB (jaxlib ~ 300 MB, scipy, numpy,
# ml_dtypes, optax); Flax and its dependencies (orbax-checkpoint, tensorstore, ...) bring
# it to 755 MB (33 s for a fresh venv with pip's download cache warm); dm-haiku (with jmp
# and tabulate) adds 4 MB. The tests take about 4 minutes after that with a debug pjc
# (CI's), most of it in the training runs; the examples/jax_haiku ones add about 70 s.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

JAX_PINS=("jax[cpu]==0.10.2" "jaxlib==0.10.2" "numpy==2.4.6" "optax==0.2.8" "flax==0.12.8"
          "dm-haiku==0.0.17")
VENV=${JAX_VENV:-$ROOT/.venv-jax}
die() { echo "test-jax.sh: FAILED: $*" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  python3 -m venv "$VENV" || die "python3 -m venv $VENV"
fi
if ! "$VENV/bin/python" -c "import jax, optax, numpy, flax, haiku; assert jax.__version__ == '0.10.2' and flax.__version__ == '0.12.8' and haiku.__version__ == '0.0.17'" 2>/dev/null; then
  echo "==> pip install ${JAX_PINS[*]}"
  start=$(date +%s)
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${JAX_PINS[@]}" || die "pip install of JAX"
  echo "installed in $(( $(date +%s) - start )) s; venv size $(du -sh "$VENV" | cut -f1)"
fi
echo "==> pip install ./python (jax2pir)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check ./python || die "pip install ./python"

if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
PJC=${PJC:-${CARGO_TARGET_DIR:-$ROOT/target}/release/pjc}
if [ ! -x "$PJC" ] || [ ! -x "$(dirname "$PJC")/pjc-runner" ]; then
  echo "==> cargo build --release -p pjc"
  cargo build --release -p pjc || die "cargo build --release -p pjc"
fi
command -v mpirun >/dev/null 2>&1 || die "mpirun not found (OpenMPI is needed for the training tests)"

echo "==> tests/jax/run.py (pjc: $PJC)"
# Run from outside the repository so that the installed jax2pir is the one tested.
cd /tmp
PJC=$PJC "$VENV/bin/python" "$ROOT/tests/jax/run.py" "$@" || die "tests/jax/run.py (see FAIL lines above)"
