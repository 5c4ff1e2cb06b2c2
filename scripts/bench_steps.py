#!/usr/bin/env python3
"""Step time at the sizes users train, pjc against JAX/XLA in the same run (issue 15).

    python3 scripts/bench_steps.py --pjc target/release/pjc --python .venv-jax/bin/python \
        [--steps 8] [--out docs/benchmarks-steps.md]

(scripts/bench-steps.sh sets up both and calls this.) Measures, on this machine:

- GEMM GFLOP/s of `dot_general` library steps (crates/pjc-host/examples/gemm_gflops.rs,
  the same code the executables run) against numpy's matmul on the same threads;
- the forward pass of a GPT block (benches/gpt_block/gen.py: batch 8, sequence 256,
  d_model 512, 8 heads, MLP 2048) on one process: the compiled executable in loop mode
  (median step of its --trace) against its JAX twin (benches/gpt_block/jax_block.py,
  jitted on one device; median of the same number of steps after two warm-ups), with the
  results compared (rtol 1e-4 of the largest magnitude).

Writes a markdown report (--out). A benchmark, never a test: nothing fails on slowness.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_name():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


NUMPY_GEMM = r'''
import json, sys, time, numpy as np
out = []
for n, dt in [(2048, np.float32), (1024, np.float64)]:
    a = np.random.rand(n, n).astype(dt); b = np.random.rand(n, n).astype(dt); a @ b
    best = 1e9
    for _ in range(5):
        t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
    out.append({"name": f"{np.dtype(dt).name} {n}^3", "gflops": 2 * n**3 / best / 1e9})
import jax, jax.numpy as jnp
for name, xs, ks, st, pad in [("conv 3x3 64->64 [8,56,56]", (8, 56, 56, 64), (3, 3, 64, 64), 1, 1),
                              ("conv 1x1 256->64 [8,56,56]", (8, 56, 56, 256), (1, 1, 256, 64), 1, 0),
                              ("conv 7x7/2 3->64 [8,224,224]", (8, 224, 224, 3), (7, 7, 3, 64), 2, 3)]:
    x = jnp.asarray(np.random.rand(*xs).astype(np.float32)); k = jnp.asarray(np.random.rand(*ks).astype(np.float32))
    f = jax.jit(lambda x, k, st=st, pad=pad: jax.lax.conv_general_dilated(x, k, (st, st), [(pad, pad)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC")))
    y = f(x, k).block_until_ready(); best = 1e9
    for _ in range(5):
        t = time.perf_counter(); f(x, k).block_until_ready(); best = min(best, time.perf_counter() - t)
    out.append({"name": name, "gflops": 2 * y.size * ks[0] * ks[1] * ks[2] / best / 1e9})
print(json.dumps(out))
'''


def step_times(trace):
    """(step ms, product ms per step): the steps after the first (the first pays for
    warming caches and the BLAS's threads), and the mean time of the `dot_general`
    library steps inside them."""
    t = json.loads(Path(trace).read_text())
    ev = t["traceEvents"] if isinstance(t, dict) else t
    steps = sorted((e for e in ev if e.get("cat") == "step"), key=lambda e: e["ts"])
    kept = steps[1:] if len(steps) > 1 else steps
    inside = lambda e: any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in kept)
    gemm = sum(e["dur"] for e in ev if e.get("cat") == "gemm" and inside(e)) / 1e3 / len(kept)
    return [s["dur"] / 1e3 for s in kept], gemm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pjc", required=True)
    ap.add_argument("--gemm-bench", required=True, help="the built gemm_gflops example")
    ap.add_argument("--python", required=True, help="a Python with jax and numpy")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks-steps.md"))
    a = ap.parse_args()
    threads = os.cpu_count()
    lines = []

    # GEMM and convolution.
    ours = subprocess.run([a.gemm_bench, str(threads)], check=True, capture_output=True, text=True).stdout
    theirs = json.loads(subprocess.run([a.python, "-c", NUMPY_GEMM], check=True, capture_output=True, text=True).stdout)
    rows = {}
    for line in ours.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[3].replace(".", "").isdigit():
            rows[cells[0]] = float(cells[3])
    lines.append("## GEMM and convolution (library steps)\n")
    lines.append(f"{threads} threads. pjc: `crates/pjc-host/examples/gemm_gflops.rs` (best of 5; convolutions best of 3), "
                 "the library-step code the executables run; numpy: `a @ b`; XLA: `jax.jit` of `lax.conv_general_dilated` (best of 5).\n")
    lines.append("| product | pjc GFLOP/s | numpy / XLA GFLOP/s | pjc / numpy or XLA |")
    lines.append("|---|---:|---:|---:|")
    np_by = {r["name"]: r["gflops"] for r in theirs}
    for name, g in rows.items():
        key = {"f32 2048^3": "float32 2048^3", "f64 1024^3": "float64 1024^3"}.get(name, name if name in np_by else None)
        if key:
            lines.append(f"| {name} | {g:.0f} | {np_by[key]:.0f} | {g / np_by[key]:.2f} |")
        else:
            lines.append(f"| {name} | {g:.0f} | | |")
    lines.append("")

    # GPT block.
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        gflop = json.loads(subprocess.run([sys.executable, str(ROOT / "benches/gpt_block/gen.py"), str(d)], check=True, capture_output=True, text=True).stdout)["gflop"]
        t = time.time()
        subprocess.run([a.pjc, "compile", str(d / "block.pir"), "-o", str(d / "block.bin")], check=True)
        compile_s = time.time() - t
        subprocess.run([str(d / "block.bin"), "--inputs", str(d / "inputs.safetensors"), "--output", str(d / "pjc.safetensors"),
                        "--steps", str(a.steps), "--log-every", str(a.steps), "--trace", str(d / "trace.json")],
                       check=True, capture_output=True)
        steps, gemm_ms = step_times(d / "trace.json")
        pjc_ms = statistics.median(steps)
        jax = json.loads(subprocess.run([a.python, str(ROOT / "benches/gpt_block/jax_block.py"), str(d), str(a.steps)],
                                        check=True, capture_output=True, text=True).stdout)
    lines.append("## GPT block forward, one process\n")
    lines.append("`benches/gpt_block/gen.py`: batch 8, sequence 256, d_model 512, 8 heads of 64, MLP 2048, "
                 f"f32; {gflop:.1f} GFLOP of products per step. pjc: the executable in loop mode, median step "
                 f"of {a.steps} (the first left out); JAX {jax['jax']}: `jax.jit` on one CPU device, median of "
                 f"{a.steps} after two warm-ups. Results agree to {jax['rel_diff']:.1e} of the largest magnitude.\n")
    lines.append("| program | pjc ms/step | products (mean ms/step) | JAX ms/step | pjc / XLA | pjc GFLOP/s |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    lines.append(f"| GPT block [8,256,512] | {pjc_ms:.1f} | {gemm_ms:.1f} | {jax['ms']:.1f} | {pjc_ms / jax['ms']:.2f} | {gflop / pjc_ms * 1e3:.0f} |")
    lines.append("")
    lines.append(f"(pjc compile -o: {compile_s:.1f} s.)\n")

    head = (f"# Step time at training sizes: pjc against JAX/XLA (CPU)\n\n"
            f"Measured by `bash scripts/bench-steps.sh` on {cpu_name()}, {threads} cores, "
            f"{time.strftime('%Y-%m-%d')}; BLAS: `PJC_BLAS={os.environ.get('PJC_BLAS', '(unset: the gemm crate)')}`, "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}.\n\n")
    Path(a.out).write_text(head + "\n".join(lines))
    print(head + "\n".join(lines))


if __name__ == "__main__":
    main()
