#!/usr/bin/env bash
# Finds ptxas (and libdevice) for the NVPTX tests, installing CUDA's compiler
# from PyPI (nvidia-cuda-nvcc-cu12, no GPU needed) into .venv when missing.
# Prints the path of ptxas on stdout; messages go to stderr.
#
#   PJC_PTXAS=$(bash scripts/ptxas.sh)
#
# Idempotent: when .venv already has it, nothing is installed. Needs python3
# with the venv module (Debian: python3-venv) and access to PyPI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "ptxas.sh: $*" >&2; }

if [ -n "${PJC_PTXAS:-}" ] && [ -x "$PJC_PTXAS" ]; then
  echo "$PJC_PTXAS"
  exit 0
fi

find_venv_ptxas() {
  ls .venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas 2>/dev/null | head -n 1
}

ptxas=$(find_venv_ptxas || true)
if [ -z "$ptxas" ]; then
  if [ ! -x .venv/bin/pip ]; then
    say "creating .venv"
    python3 -m venv .venv >&2 || { say "error: python3 -m venv failed (install python3-venv)"; exit 1; }
  fi
  say "installing nvidia-cuda-nvcc-cu12 into .venv (ptxas and libdevice)"
  # Pinned: the ptx filetests (tests/text/ptx/) hold exact PTX, which changes between releases.
  .venv/bin/pip install --quiet --disable-pip-version-check "nvidia-cuda-nvcc-cu12==12.9.86" >&2
  ptxas=$(find_venv_ptxas || true)
fi
if [ -z "$ptxas" ] || [ ! -x "$ptxas" ]; then
  say "error: ptxas not found after installing nvidia-cuda-nvcc-cu12"
  exit 1
fi
"$ptxas" --version >/dev/null || { say "error: $ptxas does not run"; exit 1; }
libdevice=$(ls .venv/lib/python3*/site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc 2>/dev/null | head -n 1 || true)
[ -n "$libdevice" ] && say "libdevice: $libdevice"
echo "$(cd "$(dirname "$ptxas")" && pwd)/$(basename "$ptxas")"
