#!/usr/bin/env bash
# Pipeline parallelism measured (issue 20): the 8-layer, 256-wide SGD step of
# mlp_stack.pir (batch 256) without --pipeline (every device gathers the 8 layers
# and runs them all) and with --pipeline stage --microbatches M, on stage=2
# (mpirun -np 2) and stage=4 (-np 4). Per configuration: pjc explain's peak memory
# per device, the median wall time of STEPS loop-mode steps over RUNS runs, and one
# traced run's split of a step (compute, collectives, waiting; pjc explain --trace's
# categories) on the first and last stage, and the share of the stages' tick time
# spent on masked (idle) ticks — the bubble as the trace shows it, against the
# formula. Prints one markdown table.
# Needs numpy (the JAX venv's, .venv-jax, or python3's) for the inputs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PJC=${PJC:-$ROOT/target/release/pjc}
PY=${PYTHON:-$ROOT/.venv-jax/bin/python}
[ -x "$PY" ] || PY=python3
RUNS=${RUNS:-3}
STEPS=${STEPS:-10}
W=${WORK:-/tmp/pjc-pipeline-bench}
PROG=$ROOT/benches/pipeline/mlp_stack.pir
mkdir -p "$W"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
"$PY" - "$W" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
for n, s, k in [('ws', (8, 256, 256), 0.06), ('bs', (8, 256), 0.1), ('x', (256, 256), 1.0), ('y', (256, 256), 1.0)]:
    np.save(f"{sys.argv[1]}/{n}.npy", (r.standard_normal(s) * k).astype(np.float32))
PY
args=()
for n in ws bs x y; do args+=(--input "$n=$W/$n.npy"); done
echo "| stages (processes) | M | bubble (S-1)/(M+S-1) | peak B/device (explain) | $STEPS steps, wall (median of $RUNS) | per step: compute / collectives / waiting, first stage | last stage | masked ticks' share of tick time, measured (first / last stage) |"
echo "|---|---:|---:|---:|---:|---|---|---:|"
for s in 2 4; do
  for m in plain 1 2 4 8 1f1b:4 1f1b:8; do
    flags=(--mesh "data=1,stage=$s")
    case $m in
      plain) ;;
      1f1b:*) flags+=(--pipeline stage --microbatches "${m#1f1b:}" --schedule 1f1b) ;;
      *) flags+=(--pipeline stage --microbatches "$m") ;;
    esac
    exe="$W/s$s-${m/:/-}.bin"
    "$PJC" compile "$PROG" "${flags[@]}" --target cpu -o "$exe" 2>/dev/null
    peak=$("$PJC" explain "$PROG" "${flags[@]}" | sed -n 's/^peak memory per device: \([0-9]*\) bytes.*/\1/p')
    times=()
    for i in $(seq "$RUNS"); do
      t0=$(date +%s%N)
      mpirun --oversubscribe -np "$s" "$exe" "${args[@]}" --steps "$STEPS" --log-every 1000 > /dev/null 2>&1
      times+=($(( ($(date +%s%N) - t0) / 1000000 )))
    done
    med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    mpirun --oversubscribe -np "$s" "$exe" "${args[@]}" --steps "$STEPS" --log-every 1000 --trace "$W/t.json" > /dev/null 2>&1
    split=$("$PY" - "$W/t.json" "$s" "$m" <<'PY'
import json, sys
d = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
# (1F1B's ticks hold a forward and a backward each: not split here.)
S, M = int(sys.argv[2]), (None if not sys.argv[3].isdigit() else int(sys.argv[3]))
out, masked = [], []
for r in (0, S - 1):
    ev = [e for e in d if e["pid"] == r and e.get("tid", 0) == 0]
    steps = max(1, sum(1 for e in ev if e.get("cat") == "step"))
    tot = lambda cats: sum(e["dur"] for e in ev if e.get("cat") in cats) / steps / 1000
    out.append(f"{tot(('kernel', 'gemm', 'library')):.1f} / {tot(('collective',)):.1f} / {tot(('wait',)):.1f} ms")
    if M is None:
        continue
    # The tick loops' iterations: each tick's run of the stage's layers is a
    # scan event (a leaf among the scans); per step, the loops run forward,
    # forward again (grad's VJP recomputes it) and backward (ticks reversed).
    scans = sorted((e for e in ev if e.get("cat") == "control" and e["name"] == "scan"), key=lambda e: e["ts"])
    inside = lambda a, b: a is not b and b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
    outer = [e for e in scans if any(inside(x, e) for x in scans)]
    T = M + S - 1
    idle = busy = 0.0
    for step in (e for e in ev if e.get("cat") == "step"):
        loops = [o for o in outer if inside(o, step)]
        for n, o in enumerate(loops):
            leaves = [x for x in scans if inside(x, o)]
            for j, x in enumerate(leaves):
                t = T - 1 - j if n == len(loops) - 1 and len(loops) > 1 else j
                busy += x["dur"]
                idle += x["dur"] if not (0 <= t - r < M) else 0.0
    masked.append(f"{idle / max(busy, 1):.3f}")
print(" | ".join(out) + " | " + (" / ".join(masked) if masked else "—"))
PY
)
    case $m in
      plain) bub="—" ;;
      1f1b:*) bub=$(awk -v s="$s" -v m="${m#1f1b:}" 'BEGIN { printf "1F1B: %d/%d = %.3f of the slots", 2 * (s - 1), m + 2 * (s - 1), 2 * (s - 1) / (m + 2 * (s - 1)) }') ;;
      *) bub=$(awk -v s="$s" -v m="$m" 'BEGIN { printf "%d/%d = %.3f", s - 1, m + s - 1, (s - 1) / (m + s - 1) }') ;;
    esac
    echo "| $s ($s) | ${m#1f1b:} | $bub | $peak | $med ms | $split |"
  done
done
