#!/usr/bin/env bash
# Installs what building and running pjc needs on a Debian 12 machine.
#
# Idempotent and quick when everything is already there: installed packages are
# checked with dpkg first, and apt-get runs only for the missing ones. Needs root
# (or sudo) only when something has to be installed. Rust itself is not installed
# here (it cannot be fetched on every machine); the script checks that a recent
# enough cargo is on PATH and says so clearly when it is not.
set -euo pipefail

# Debian packages the project needs. To add some, add one line here.
APT_PACKAGES=(
  gcc libc6-dev pkg-config   # the linker for Rust, and C code built by crates
  git ca-certificates        # cargo fetching crates, version info
  python3 python3-venv       # examples/make_inputs.py; later, tools installed in a venv
  llvm-22-dev libpolly-22-dev libzstd-dev zlib1g-dev libffi-dev   # LLVM 22 for code generation (inkwell)
  libopenmpi-dev openmpi-bin                    # OpenMPI: the multi-process runtime (pjc-runtime, rsmpi) and mpirun for its tests
  libclang1-22 libclang-common-22-dev           # libclang for bindgen in rsmpi's mpi-sys build (stddef.h comes from -common)
  libopenblas0-pthread                          # OpenBLAS: the tests cover the optional CBLAS path (PJC_BLAS) with it
  libmlir-22-dev mlir-22-tools                  # MLIR 22: melior links it statically (--emit mlir, pjc import); mlir-opt-22 verifies in the tests
)
# What only the test job needs: Chromium for the HTML report's browser test
# (crates/pjc/tests/report.rs), when PJC_REQUIRE_BROWSER=1 (.ci/run sets it;
# without it the test skips where no browser is installed).
if [ "${PJC_REQUIRE_BROWSER:-}" = "1" ]; then
  APT_PACKAGES+=(chromium)
fi
MIN_RUST=1.80

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# ---- system packages --------------------------------------------------------------
is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  die "this script supports Debian/Ubuntu (dpkg and apt-get); install these packages by hand: ${APT_PACKAGES[*]}"
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
  say "all ${#APT_PACKAGES[@]} system packages already installed (${APT_PACKAGES[*]})"
else
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    die "missing packages (${missing[*]}) and not root, with no sudo: run this script as root"
  fi
  say "installing ${#missing[@]} system package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  for pkg in "${missing[@]}"; do
    is_installed "$pkg" || die "package $pkg is still not installed after apt-get install"
  done
  say "installed: ${missing[*]}"
fi

# ---- Rust ---------------------------------------------------------------------------
# A rustup install puts cargo in ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
  die "cargo/rustc not found: Rust $MIN_RUST or newer must be installed (e.g. with rustup) and cargo must be on PATH"
fi
rust_version=$(rustc --version | awk '{print $2}')
rust_mm=${rust_version%%-*}   # drop a -nightly/-beta suffix
IFS=. read -r have_major have_minor _ <<<"$rust_mm"
IFS=. read -r need_major need_minor <<<"$MIN_RUST"
if [ "$have_major" -lt "$need_major" ] || { [ "$have_major" -eq "$need_major" ] && [ "$have_minor" -lt "$need_minor" ]; }; then
  die "rustc $rust_version is too old: Rust $MIN_RUST or newer must be installed"
fi
say "Rust OK: $(rustc --version), $(cargo --version)"
