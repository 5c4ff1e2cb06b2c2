#!/usr/bin/env bash
# Collectives overlapped with compute, measured: the data-parallel 4-layer MLP of
# mlp_deep_train.pir on `mpirun -np 2`, 20 steps, with the collectives thread
# (default) and without (PJC_ASYNC_COLLECTIVES=0), alternating RUNS times, then one
# traced run of each whose all-reduce time overlapping compute is summed per rank.
# Needs numpy (the JAX venv's, .venv-jax, or python3's) for the inputs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PJC=${PJC:-$ROOT/target/release/pjc}
PY=${PYTHON:-$ROOT/.venv-jax/bin/python}
[ -x "$PY" ] || PY=python3
RUNS=${RUNS:-5}
W=${WORK:-/tmp/pjc-overlap}
mkdir -p "$W"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
"$PJC" compile "$ROOT/benches/overlap/mlp_deep_train.pir" -o "$W/deep.bin"
"$PY" - "$W" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
for n, s in [('x', (512, 1024)), ('y', (512, 16)), ('w1', (1024, 1024)), ('w2', (1024, 1024)), ('w3', (1024, 1024)), ('w4', (1024, 1024)), ('head', (1024, 16))]:
    np.save(f"{sys.argv[1]}/{n}.npy", (r.standard_normal(s) * 0.03).astype(np.float32))
PY
args=()
for n in x y w1 w2 w3 w4 head; do args+=(--input "$n=$W/$n.npy"); done
run() { PJC_ASYNC_COLLECTIVES=$1 mpirun --oversubscribe -np 2 "$W/deep.bin" "${args[@]}" --steps 20 --log-every 100 "${@:2}" > /dev/null; }
for i in $(seq "$RUNS"); do
  for a in 1 0; do
    t0=$(date +%s%N); run $a; echo "async=$a: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
done
for a in 1 0; do
  run $a --trace "$W/t$a.json"
  "$PY" - "$W/t$a.json" "$a" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
for r in sorted({e["pid"] for e in d if e.get("ph") == "X"}):
    c = [e for e in d if e.get("cat") == "collective" and e["pid"] == r]
    comp = [(e["ts"], e["ts"] + e["dur"]) for e in d if e.get("cat") in ("kernel", "gemm", "library") and e["pid"] == r and e["tid"] == 0]
    tot = sum(e["dur"] for e in c)
    hid = sum(max(0, min(b, e["ts"] + e["dur"]) - max(a, e["ts"])) for e in c for a, b in comp if e["tid"] == 1)
    print(f"async={sys.argv[2]} rank {r}: collectives {tot/1000:.1f} ms over 20 steps, {hid/max(tot,1):.0%} of it overlapping compute")
PY
done
