#!/usr/bin/env python3
"""Step time at the sizes users train, pjc against JAX/XLA in the same run (issue 15).

    python3 scripts/bench_steps.py --pjc target/release/pjc --gemm-bench target/release/examples/gemm_gflops \
        --python .venv-jax/bin/python [--steps 8] [--quick] [--only SECTION,...] [--out docs/benchmarks-steps.md]

(scripts/bench-steps.sh sets up all three and calls this.) Sections (--only picks some):

- `gemm`: GEMM GFLOP/s of `dot_general` library steps (crates/pjc-host/examples/gemm_gflops.rs,
  the same code the executables run) against numpy's matmul on the same threads, and
  convolutions against `jax.jit` of `lax.conv_general_dilated`;
- `gpt`: the forward pass of a GPT block (benches/gpt_block/gen.py: batch 8, sequence 256,
  d_model 512, 8 heads, MLP 2048) on one process against its JAX twin
  (benches/gpt_block/jax_block.py, jitted on one device);
- `gpt_scan`: a stack of 24 such blocks (issue 16, part 8), written as flax's `nn.scan`
  exports it — one `scan` over weights stacked along dimension 0, the block as its
  step — against the same 24 blocks unrolled (weights of their own per layer), both
  compiled by pjc: compile time of the scan stack against the one-block program and the
  unrolled stack, step time of the scan stack against the unrolled one, and their
  agreement (the same values, so the same sums in the same order);
- `resnet50`, `mlp`, `convnet`: programs written in plain JAX (benches/<name>/model.py),
  exported to PIR by jax2pir (benches/harness/jax_steps.py): ResNet-50 at 224x224,
  batch 8 (the forward pass with batch norm folded, and a training step), an MLP
  784-2048-2048-10 training step at batch 256, a small CNN training step (32x32, batch
  64); one process against `jax.jit` on one CPU device;
- `dp2`: N = 2 processes against N = 2 host devices: the MLP training step and the GPT
  block data-parallel on mesh [data=2], the executable under `mpirun -np 2` against JAX
  with XLA_FLAGS=--xla_force_host_platform_device_count=2 and NamedShardings (batch
  split, parameters replicated).

How each is timed: pjc's executable runs in loop mode (`--steps S`, carried results fed
back, the same inputs every step, `--trace`); its step time is the median `step` event of
the trace with the first step left out (it warms caches and threads; with N ranks, the
slowest rank's time for each step), and the fastest such step is given too. JAX's jitted
function runs two warm-up steps and then S timed steps (`block_until_ready` each,
carried results fed back); its step time is the median, and the fastest is given too
(on a shared machine the fastest step is the one least disturbed by other work; the
report records the load average at its start and end). The two sides' timed runs
alternate --rounds times (default 2), and each side keeps its round with the lower
median. Agreement: pjc's `--output`
against JAX's results from the same inputs, max over results of max|pjc - jax| /
max|jax| (a forward pass: its output; a training step: its results after one step, from
a separate one-step run of the executable). Where that exceeds AGREE, both are compared
in the same way with a float64 run of the same step (benches/harness/jax_steps.py ref),
which tells pjc's errors from f32 rounding the program amplifies. The trace also says
where pjc's step goes: time per category (products, convolutions and other library
steps, fused kernels, collectives) and the plan steps (`pjc compile --emit plan`,
matched to the trace's events in order) that take the most.

--quick runs every section at reduced sizes (3 steps, a written report in
/tmp/benchmarks-steps-quick.md unless --out is given) to check the script fast; the full
run is the default. Writes a markdown report (--out). A benchmark, never a test: nothing
fails on slowness.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["gemm", "gpt", "gpt_scan", "resnet50", "mlp", "convnet", "dp2"]
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_pml": "ob1",
}
# Results within this relative difference of JAX's agree; further apart, both are
# compared with a float64 run of the same steps, and pjc agrees when it is no further
# from it than XLA's f32 result (within 2x).
AGREE = 1e-4


def cpu_name():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def revision():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


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
def timed(f, *args):
    f(*args).block_until_ready(); best = 1e9
    for _ in range(5):
        t = time.perf_counter(); f(*args).block_until_ready(); best = min(best, time.perf_counter() - t)
    return best
bf = lambda *s: jnp.asarray(np.random.rand(*s).astype(np.float32)).astype(jnp.bfloat16)
a, b = bf(2048, 2048), bf(2048, 2048)
f = jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32))
out.append({"name": "bf16 2048^3 (f32 acc.)", "gflops": 2 * 2048**3 / timed(f, a, b) / 1e9})
x, k = bf(8, 56, 56, 64), bf(3, 3, 64, 64)
f = jax.jit(lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), [(1, 1)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC")))
out.append({"name": "conv 3x3 64->64 [8,56,56] bf16", "gflops": 2 * 8 * 56 * 56 * 64 * 9 * 64 / timed(f, x, k) / 1e9})
# Kernel gradients as jax.grad writes them: activations and output gradient NHWC.
for name, xs in [("conv 3x3 64->64 kernel gradient [8,56,56]", (8, 56, 56, 64)), ("conv 3x3 64->64 kernel gradient [64,16,16] (CNN)", (64, 16, 16, 64))]:
    x = jnp.asarray(np.random.rand(*xs).astype(np.float32)); dy = jnp.asarray(np.random.rand(*xs).astype(np.float32))
    f = jax.jit(lambda x, dy: jax.lax.conv_general_dilated(x, dy, (1, 1), [(1, 1)] * 2, dimension_numbers=("CHWN", "IHWO", "HWNC")))
    out.append({"name": name, "gflops": 2 * 9 * 64 * 64 * xs[0] * xs[1] * xs[2] / timed(f, x, dy) / 1e9})
print(json.dumps(out))
'''


def run(cmd, env=None, what=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=e)
    if r.returncode != 0:
        raise RuntimeError(f"{what or cmd[0]} exited with {r.returncode}: {(r.stderr or r.stdout).strip()[-1500:]}")
    return r.stdout


def events_of(trace):
    t = json.loads(Path(trace).read_text())
    return t["traceEvents"] if isinstance(t, dict) else t


def step_times(trace):
    """(step ms, product ms per step): the steps after the first (the first pays for
    warming caches and the BLAS's threads), and the mean time of the `dot_general`
    library steps inside them (rank 0). With several ranks a step's time is the
    slowest rank's."""
    ev = events_of(trace)
    by_step = {}
    for e in ev:
        if e.get("cat") == "step":
            by_step.setdefault(e["args"].get("step", e["name"]), []).append(e["dur"] / 1e3)
    order = sorted(by_step)
    kept = order[1:] if len(order) > 1 else order
    r0 = sorted((e for e in ev if e.get("cat") == "step" and e.get("pid", 0) == 0), key=lambda e: e["ts"])
    r0 = r0[1:] if len(r0) > 1 else r0
    inside = lambda e: any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in r0)
    gemm = sum(e["dur"] for e in ev if e.get("cat") == "gemm" and e.get("pid", 0) == 0 and inside(e)) / 1e3 / len(r0)
    return [max(by_step[k]) for k in kept], gemm


def plan_steps(plan, program=""):
    """The plan's steps in order: (trace category, trace name, description). A fused
    kernel is described by its domain, its operands' types and the ops it fuses (looked
    up in the PIR program by value name)."""
    ops = dict(re.findall(r"^\s*%(\S+) = (\w+)", program, re.M))
    types = dict(re.findall(r"^  (b\d+) = %\S+ : (\S+)", plan, re.M))
    ty = lambda bs: [types.get(b.strip(), "?") for b in bs.split(",") if b.strip()]
    dims = lambda t: [int(x) for x in re.findall(r"\d+", t.split("[", 1)[1])] if "[" in t else []
    out, backward = [], False
    for line in plan.splitlines():
        # (`--emit plan` may print the step's attributes, `{dims="...", ...}`, after its op.)
        m = re.match(r"  library (\w+)(?: \{.*?\})? \(([^)]*)\) -> \(([^)]*)\)", line)
        if m:
            op, ins, outs = m.group(1), ty(m.group(2)), ty(m.group(3))
            desc = f"{op} {' x '.join(ins)} -> {', '.join(outs)}"
            if op == "convolution" and len(ins) == 2 and outs:
                # Which pass (NHWC x HWIO as jax2pir exports): a result with the input's
                # batch is a forward pass or an input gradient, told apart by the channel
                # counts, or, where they are equal, by order (the backward pass starts
                # at the first weight gradient); any other result is a weight gradient.
                a, k, o = dims(ins[0]), dims(ins[1]), dims(outs[0])
                if a and o and k and a[0] == o[0]:
                    if len(k) == 4 and k[2] != k[3]:
                        kind = "forward" if (a[-1], o[-1]) == (k[2], k[3]) else "input gradient"
                    else:
                        kind = "input gradient" if backward else "forward"
                else:
                    kind, backward = "weight gradient", True
                desc += f" ({kind})"
            out.append(("gemm" if op == "dot_general" else "library", op, desc))
            continue
        m = re.match(r"  kernel (\S+) (\[[^\]]*\])(.*?)\(([^)]*)\).*?fuses (.*)", line)
        if m:
            red = m.group(3).strip()
            ins = ", ".join(ty(re.sub(r":\w+", "", m.group(4))))
            fused = [ops[v.lstrip("%")] for v in m.group(5).split() if v.lstrip("%") in ops]
            kinds = " ".join(dict.fromkeys(k for k in fused if k != "constant"))
            out.append(("kernel", m.group(1), f"kernel {m.group(1)} {m.group(2)}{' ' + red if red else ''} ({ins})"
                                              f"{': ' + kinds if kinds else ''}"))
            continue
        m = re.match(r"  collective (\w+) (\{[^}]*\}) \(([^)]*)\) -> \(([^)]*)\)", line)
        if m:
            out.append(("collective", m.group(1), f"{m.group(1)} {m.group(2)} {', '.join(ty(m.group(3)))}"))
    return out


def breakdown(trace, plan, program):
    """Where the slowest rank's steps go (the steps after the first): mean ms per step
    by category, fused kernels split into reductions and elementwise ones, and the plan
    steps taking the most (identical descriptions summed)."""
    ev = [e for e in events_of(trace) if e.get("ph") == "X"]
    ranks = sorted({e.get("pid", 0) for e in ev})

    def steps_of(rank):
        st = sorted((e for e in ev if e.get("pid", 0) == rank and e.get("cat") == "step"), key=lambda e: e["ts"])
        return st[1:] if len(st) > 1 else st

    rank = max(ranks, key=lambda r: statistics.mean(s["dur"] for s in steps_of(r)) if steps_of(r) else 0)
    mine = sorted((e for e in ev if e.get("pid", 0) == rank), key=lambda e: e["ts"])
    steps = steps_of(rank)
    cats, named, kinds = {}, {}, {"reductions": [0.0, 0], "elementwise": [0.0, 0]}
    matched = True
    psteps = plan_steps(plan, program) if plan else []
    for s in steps:
        inner = [e for e in mine if e.get("cat") in ("kernel", "gemm", "library", "collective")
                 and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        j = 0
        for e in inner:
            cats[e["cat"]] = cats.get(e["cat"], 0.0) + e["dur"]
            desc = None
            for k in range(j, len(psteps)):
                c, n, d = psteps[k]
                if c == e["cat"] and n == e["name"]:
                    desc, j = d, k + 1
                    break
            if desc is None:
                matched = False
                desc = f"{e['cat']} {e['name']}"
            if e["cat"] == "kernel":
                kind = kinds["reductions" if " reduce " in desc else "elementwise"]
                kind[0] += e["dur"]
                kind[1] += 1
            named.setdefault(desc, [0.0, 0])
            named[desc][0] += e["dur"]
            named[desc][1] += 1
    n = max(1, len(steps))
    step_ms = statistics.mean(s["dur"] for s in steps) / 1e3 if steps else 0.0
    cats = {k: v / 1e3 / n for k, v in cats.items()}
    top = sorted(((v[0] / 1e3 / n, v[1] // n, d) for d, v in named.items()), reverse=True)
    return {"rank": rank, "ranks": len(ranks), "step_ms": step_ms, "cats": cats, "top": top[:8], "matched": matched,
            "kernels": sum(1 for c, _, _ in psteps if c == "kernel"),
            "kinds": {k: (v[0] / 1e3 / n, v[1] // n) for k, v in kinds.items()}}


def compile_pjc(a, pir, inputs, devices, work, carry=False):
    """pjc compile -o and --emit plan; for a program that carries state (a training
    step), one step whose results go to work/pjc.safetensors. Returns (compile s, a
    function running one timed loop: (step ms list, product ms, breakdown))."""
    exe = work / "model.bin"
    t = time.time()
    run([a.pjc, "compile", pir, "-o", exe], what="pjc compile")
    compile_s = time.time() - t
    plan = run([a.pjc, "compile", pir, "--emit", "plan"], what="pjc compile --emit plan")
    mpi = ["mpirun", "--oversubscribe", "-np", str(devices)] if devices > 1 else []
    what = "the executable" if devices == 1 else f"mpirun -np {devices}"
    if carry:
        run(mpi + [exe, "--inputs", inputs, "--output", work / "pjc.safetensors", "--steps", "1", "--log-every", "1",
                   "--device", "cpu"], env=MPI_ENV, what=what)
    out = work / ("loop.safetensors" if carry else "pjc.safetensors")

    def timed():
        run(mpi + [exe, "--inputs", inputs, "--output", out, "--steps", str(a.steps), "--log-every", str(a.steps),
                   "--trace", work / "trace.json", "--device", "cpu"], env=MPI_ENV, what=what)
        times, gemm_ms = step_times(work / "trace.json")
        return times, gemm_ms, breakdown(work / "trace.json", plan, Path(pir).read_text())

    return compile_s, timed


def alternate(a, pjc_timed, jax_timed):
    """pjc's timed loop and JAX's, one after the other, a.rounds times; each side's
    round with the lowest median step is kept (on a shared machine, the round least
    disturbed by other work; alternating gives both sides the same chances)."""
    p = j = None
    for _ in range(a.rounds):
        pr = pjc_timed()
        if p is None or statistics.median(pr[0]) < statistics.median(p[0]):
            p = pr
        jr = jax_timed()
        if j is None or jr["ms"] < j["ms"]:
            j = jr
    return p, j


def jax_env(devices):
    env = {"PYTHONPATH": str(ROOT / "python"), "JAX_PLATFORMS": "cpu"}
    if devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return env


def exported(a, model, prog, work):
    """A program of benches/<model>/model.py: export, pjc, JAX; one result dict."""
    work.mkdir(parents=True, exist_ok=True)
    harness = ROOT / "benches/harness/jax_steps.py"
    mpy = ROOT / "benches" / model / "model.py"
    q = ["--quick"] if a.quick else []
    t = time.time()
    meta = json.loads(run([a.python, harness, "export", mpy, prog, work] + q, env=jax_env(1), what="jax2pir export").strip().splitlines()[-1])
    export_s = time.time() - t
    carry = meta["carry"] > 0
    compile_s, timed = compile_pjc(a, work / "program.pir", work / "inputs.safetensors", meta["devices"], work, carry)
    at = "1" if carry else str(a.steps)  # a training step is compared after one step
    (times, gemm_ms, bd), j = alternate(a, timed, lambda: json.loads(
        run([a.python, harness, "time", mpy, prog, work, str(a.steps), at] + q,
            env=jax_env(meta["devices"]), what="the JAX side").strip().splitlines()[-1]))
    ref = {}
    if j["rel_diff"] is not None and j["rel_diff"] > AGREE:
        ref = json.loads(run([a.python, harness, "ref", mpy, prog, work, str(a.steps), at] + q,
                             env=jax_env(1), what="the float64 reference").strip().splitlines()[-1])
    return {**ref, "name": f"{model}:{prog}", "label": meta["label"], "devices": meta["devices"], "gflop": meta["gflop"],
            "statements": meta["statements"], "export_s": export_s, "compile_s": compile_s,
            "pjc_ms": statistics.median(times), "pjc_best": min(times), "gemm_ms": gemm_ms, "jax_ms": j["ms"],
            "jax_best": j["best_ms"], "jax_compile_s": j["compile_s"],
            "rel_diff": j["rel_diff"], "worst": j["worst"], "jax": j["jax"], "breakdown": bd}


def gpt_sizes(quick):
    return (2, 64, 128, 2, 512) if quick else (8, 256, 512, 8, 2048)


def gpt(a, devices, work):
    """The GPT block forward (benches/gpt_block), on one process or data-parallel."""
    work.mkdir(parents=True, exist_ok=True)
    b, s, d, h, f = gpt_sizes(a.quick)
    gen = [sys.executable, ROOT / "benches/gpt_block/gen.py", work, "--batch", b, "--seq", s, "--d-model", d,
           "--heads", h, "--ff", f] + (["--mesh", f"data={devices}"] if devices > 1 else [])
    gflop = json.loads(run(gen, what="gpt_block/gen.py"))["gflop"]
    compile_s, timed = compile_pjc(a, work / "block.pir", work / "inputs.safetensors", devices, work)
    (times, gemm_ms, bd), j = alternate(a, timed, lambda: json.loads(
        run([a.python, ROOT / "benches/gpt_block/jax_block.py", work, str(a.steps), str(devices)],
            env=jax_env(devices), what="gpt_block/jax_block.py").strip().splitlines()[-1]))
    where = f"over [data={devices}]" if devices > 1 else "one device"
    return {"name": "gpt_block" + (f" [data={devices}]" if devices > 1 else ""),
            "label": f"GPT block forward [{b},{s},{d}], {h} heads of {d // h}, MLP {f}, {where}",
            "devices": devices, "gflop": gflop, "compile_s": compile_s, "pjc_ms": statistics.median(times),
            "pjc_best": min(times), "gemm_ms": gemm_ms, "jax_ms": j["ms"], "jax_best": j["best_ms"], "rel_diff": j["rel_diff"], "worst": "out", "jax": j["jax"],
            "breakdown": bd, "sizes": (b, s, d, h, f)}


def gpt_scan(a, work):
    """24 GPT blocks as one scan against the same blocks unrolled (benches/gpt_block/gen.py
    --layers), and the one-block program's compile time."""
    b, s, d, h, f = gpt_sizes(a.quick)
    layers = 4 if a.quick else 24
    sizes = ["--batch", b, "--seq", s, "--d-model", d, "--heads", h, "--ff", f]
    out = {"layers": layers, "sizes": (b, s, d, h, f)}
    for kind in ["one", "scan", "unrolled"]:
        w = work / kind
        w.mkdir(parents=True, exist_ok=True)
        extra = [] if kind == "one" else ["--layers", layers, "--stack", kind]
        gflop = json.loads(run([sys.executable, ROOT / "benches/gpt_block/gen.py", w] + sizes + extra, what="gpt_block/gen.py"))["gflop"]
        compile_s, timed = compile_pjc(a, w / "block.pir", w / "inputs.safetensors", 1, w)
        out[kind] = {"compile_s": compile_s, "gflop": gflop, "timed": timed,
                     "statements": len(re.findall(r"^\s*%", (w / "block.pir").read_text(), re.M)),
                     "kernels": len(re.findall(r"^\s*kernel ", run([a.pjc, "compile", w / "block.pir", "--emit", "plan"]), re.M))}
    # Step times, the two stacks alternating.
    for _ in range(a.rounds):
        for kind in ["scan", "unrolled"]:
            times, _, _ = out[kind]["timed"]()
            if "ms" not in out[kind] or statistics.median(times) < out[kind]["ms"]:
                out[kind]["ms"], out[kind]["best"] = statistics.median(times), min(times)
    got = {k: dict(read_safetensors(work / k / "pjc.safetensors")) for k in ["scan", "unrolled"]}
    x, y = got["scan"]["out"], got["unrolled"]["out"]
    out["rel_diff"] = max(abs(p - q) for p, q in zip(x, y)) / max(abs(q) for q in y)
    return out


def read_safetensors(path):
    """(name, flat list of f32 values) of a safetensors file (standard library only)."""
    import struct
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        yield name, struct.unpack(f"<{(hi - lo) // 4}f", raw[8 + n + lo:8 + n + hi])


def gpt_scan_section(a, r):
    b, s, d, h, f = r["sizes"]
    L, one, sc, un = r["layers"], r["one"], r["scan"], r["unrolled"]
    return "\n".join([
        "## A stack of GPT blocks as one scan (issue 16, part 8)\n",
        f"{L} GPT blocks [{b},{s},{d}] ({h} heads of {d // h}, MLP {f}, f32; {sc['gflop']:.0f} GFLOP of products per step), "
        f"`benches/gpt_block/gen.py --layers {L}`: `--stack scan` writes them as flax's `nn.scan` exports a layer stack "
        f"(each weight stacked along a new dimension 0, one `scan` whose step is the block, the activations its carry), "
        f"`--stack unrolled` as {L} blocks one after the other with weights of their own (the same values). "
        f"pjc compiles the scan's step once — its kernels fuse inside it, its products read their weights through "
        f"windows into the stacked arrays — and the step runs {L} times. Both executables in loop mode, "
        f"median step of {a.steps} (the first left out), the better of {a.rounds} rounds, the two alternating. "
        f"The outputs agree to {r['rel_diff']:.1e} of the largest magnitude.\n",
        "| program | statements | plan kernels | `pjc compile -o` s | ms/step, median (best) | GFLOP/s |",
        "|---|---:|---:|---:|---:|---:|",
        f"| one block | {one['statements']} | {one['kernels']} | {one['compile_s']:.1f} | | |",
        f"| {L} blocks, one scan | {sc['statements']} | {sc['kernels']} | {sc['compile_s']:.1f} | {sc['ms']:.0f} ({sc['best']:.0f}) | {sc['gflop'] / sc['ms'] * 1e3:.0f} |",
        f"| {L} blocks unrolled | {un['statements']} | {un['kernels']} | {un['compile_s']:.1f} | {un['ms']:.0f} ({un['best']:.0f}) | {un['gflop'] / un['ms'] * 1e3:.0f} |",
        "",
        f"Compile time: the scan stack {sc['compile_s'] / one['compile_s']:.1f}x the one-block program's, the unrolled stack "
        f"{un['compile_s'] / one['compile_s']:.1f}x. Step time: the scan stack {sc['ms'] / un['ms']:.2f}x the unrolled one's.\n",
    ])


def agree(r):
    """The agreement column: pjc against JAX; where they differ by more than AGREE, both
    against the float64 result (benches/harness/jax_steps.py ref)."""
    if r.get("rel_diff") is None:
        return "-"
    if r["rel_diff"] <= AGREE:
        return f"yes, {r['rel_diff']:.1e}"
    if r.get("pjc_vs_f64") is None:
        return f"NO, {r['rel_diff']:.1e}"
    p, j = r["pjc_vs_f64"], r["jax_vs_f64"]
    ok = p <= max(2 * j, AGREE)
    return (f"{'yes, as close to float64 as XLA' if ok else 'NO'}: {r['rel_diff']:.1e} apart; "
            f"from float64: pjc {p:.1e}, XLA {j:.1e}")


def row(r):
    if "error" in r:
        return f"| {r['name']} | | | | | | failed: {r['error']} |"
    ratio = r["pjc_ms"] / r["jax_ms"]
    g = r["gflop"]
    return (f"| {r['label']} | {g:.2f} | {r['pjc_ms']:.1f} ({r['pjc_best']:.1f}) | {r['jax_ms']:.1f} ({r['jax_best']:.1f}) "
            f"| **{ratio:.2f}** ({r['pjc_best'] / r['jax_best']:.2f}) "
            f"| {g / r['pjc_ms'] * 1e3:.0f} / {g / r['jax_ms'] * 1e3:.0f} | {agree(r)} |")


CAT_NAMES = {"gemm": "products (dot_general)", "library": "other library steps (convolution, ...)",
             "kernel": "fused kernels", "collective": "collectives"}


def where_time_goes(r):
    bd = r["breakdown"]
    ratio = r["pjc_ms"] / r["jax_ms"]
    best = f"; fastest steps {r['pjc_best']:.1f} against {r['jax_best']:.1f}, {r['pjc_best'] / r['jax_best']:.2f}x"
    verdict = (f"**pjc is {ratio:.2f}x slower than XLA** ({r['pjc_ms']:.1f} against {r['jax_ms']:.1f} ms per step{best})"
               if ratio > 1.05 else
               f"pjc is {'faster than' if ratio < 0.95 else 'level with'} XLA ({ratio:.2f}x: {r['pjc_ms']:.1f} "
               f"against {r['jax_ms']:.1f} ms per step{best})")
    who = f"rank {bd['rank']} of {bd['ranks']}, the slower" if bd["ranks"] > 1 else "one process"
    out = [f"### {r['label']}\n", f"{verdict}. pjc's step ({who}; mean {bd['step_ms']:.1f} ms):\n"]
    cats = bd["cats"]
    inside = sum(cats.values())
    parts = []
    for k, v in sorted(cats.items(), key=lambda kv: -kv[1]):
        part = f"{CAT_NAMES.get(k, k)} {v:.1f} ms"
        if k == "kernel":
            (rm, rn), (em, en) = bd["kinds"]["reductions"], bd["kinds"]["elementwise"]
            part += f" ({rn} reductions {rm:.1f} ms, {en} elementwise {em:.1f} ms)"
        parts.append(part)
    parts.append(f"outside any event {max(0.0, bd['step_ms'] - inside):.1f} ms")
    out.append("- by category, per step: " + "; ".join(parts) + ";")
    out.append("- the plan steps taking the most (ms per step, count per step):\n")
    out.append("| ms/step | count | plan step |")
    out.append("|---:|---:|---|")
    for ms, n, d in bd["top"]:
        out.append(f"| {ms:.1f} | {n} | `{d}` |")
    if not bd["matched"]:
        out.append("\n(Some trace events could not be matched to the plan in order; those are named by their event.)")
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pjc", required=True)
    ap.add_argument("--gemm-bench", required=True, help="the built gemm_gflops example")
    ap.add_argument("--python", required=True, help="a Python with jax and numpy")
    ap.add_argument("--steps", type=int, default=None, help="steps per measurement (default 8; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="reduced sizes, to check the script fast")
    ap.add_argument("--rounds", type=int, default=None,
                    help="alternate pjc's and JAX's timed runs this many times, keep each side's best (default 2; 1 with --quick)")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}")
    ap.add_argument("--out", default=None, help="the report (default docs/benchmarks-steps.md; "
                                               "/tmp/benchmarks-steps-quick.md with --quick)")
    a = ap.parse_args()
    a.steps = a.steps or (3 if a.quick else 8)
    a.rounds = a.rounds or (1 if a.quick else 2)
    a.out = a.out or ("/tmp/benchmarks-steps-quick.md" if a.quick else str(ROOT / "docs" / "benchmarks-steps.md"))
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    bad = [s for s in only if s not in SECTIONS]
    if bad:
        sys.exit(f"bench_steps.py: unknown section(s) {bad}; sections: {SECTIONS}")
    threads = os.cpu_count()
    load_start = loadavg()
    lines = []
    slow = []

    def attempt(name, f):
        print(f"bench_steps.py: {name} ...", file=sys.stderr, flush=True)
        try:
            r = f()
        except Exception as e:  # one failing program is a row, not the end
            print(f"bench_steps.py: {name}: FAILED: {e}", file=sys.stderr, flush=True)
            return {"name": name, "error": str(e).replace("\n", " ")[:300].replace("|", "/")}
        print(f"bench_steps.py: {name}: pjc {r['pjc_ms']:.1f} ms, JAX {r['jax_ms']:.1f} ms, agree {agree(r)}",
              file=sys.stderr, flush=True)
        return r

    if "gemm" in only:
        ours = run([a.gemm_bench, str(threads)], what="gemm_gflops")
        theirs = json.loads(run([a.python, "-c", NUMPY_GEMM], env=jax_env(1), what="numpy/XLA GEMM"))
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

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "gpt" in only:
            r = attempt("gpt_block", lambda: gpt(a, 1, tmp / "gpt1"))
            lines.append("## GPT block forward, one process\n")
            if "error" in r:
                lines.append(f"Failed: {r['error']}\n")
            else:
                b, s, d, h, f = r["sizes"]
                lines.append(f"`benches/gpt_block/gen.py`: batch {b}, sequence {s}, d_model {d}, {h} heads of {d // h}, MLP {f}, "
                             f"f32; {r['gflop']:.1f} GFLOP of products per step. pjc: the executable in loop mode, median step "
                             f"of {a.steps} (the first left out); JAX {r['jax']}: `jax.jit` on one CPU device, median of "
                             f"{a.steps} after two warm-ups; the better of {a.rounds} alternating rounds on each side. "
                             f"Results agree to {r['rel_diff']:.1e} of the largest magnitude.\n")
                lines.append("| program | pjc ms/step | products (mean ms/step) | JAX ms/step | pjc / XLA | pjc GFLOP/s | fastest step: pjc / JAX ms |")
                lines.append("|---|---:|---:|---:|---:|---:|---:|")
                lines.append(f"| GPT block [{b},{s},{d}] | {r['pjc_ms']:.1f} | {r['gemm_ms']:.1f} | {r['jax_ms']:.1f} | "
                             f"{r['pjc_ms'] / r['jax_ms']:.2f} | {r['gflop'] / r['pjc_ms'] * 1e3:.0f} | "
                             f"{r['pjc_best']:.1f} / {r['jax_best']:.1f} |")
                lines.append("")
                lines.append(f"(pjc compile -o: {r['compile_s']:.1f} s.)\n")
                slow.append(r)

        if "gpt_scan" in only:
            print("bench_steps.py: gpt_scan ...", file=sys.stderr, flush=True)
            try:
                lines.append(gpt_scan_section(a, gpt_scan(a, tmp / "gptscan")))
            except Exception as e:
                lines.append(f"## A stack of GPT blocks as one scan (issue 16, part 8)\n\nFailed: {str(e)[:300]}\n")

        one = [(m, p) for m, p in [("resnet50", "forward"), ("resnet50", "train"), ("mlp", "train"), ("convnet", "train")]
               if m in only]
        results = [attempt(f"{m}:{p}", lambda m=m, p=p: exported(a, m, p, tmp / f"{m}-{p}")) for m, p in one]
        header = ("| program | GFLOP/step (products) | pjc ms/step, median (best) | JAX ms/step, median (best) | pjc / XLA, median (best) "
                  "| GFLOP/s pjc / XLA (median) | agree (max rel. diff) |\n"
                  "|---|---:|---:|---:|---:|---:|---|")
        jaxv = next((r["jax"] for r in results if "jax" in r), "?")
        if results:
            lines.append("## Programs exported from JAX, one process\n")
            lines.append(
                "Written in plain JAX (`benches/resnet50/model.py`, `benches/mlp/model.py`, `benches/convnet/model.py`), "
                "exported to PIR by jax2pir (`benches/harness/jax_steps.py`), compiled with `pjc compile -o` and run in "
                f"loop mode ({a.steps} steps; the median and the fastest step of the trace, the first left out) against "
                f"`jax.jit` of the same function on one CPU device (JAX {jaxv}; median and fastest of {a.steps} after two "
                f"warm-ups; each side the better of {a.rounds} rounds, pjc's and JAX's alternating), f32, the same inputs "
                f"every step, training steps' parameters fed back on both sides. The "
                f"fastest step is the one least disturbed by other work on the machine (see the load average above). "
                f"GFLOP: 2 x multiply-adds of the step's `dot_general`s and convolutions (backward pass included). "
                f"Agreement: every result (a training step's: after one step from the same inputs, from a separate "
                f"one-step run of the executable), max |pjc - JAX| / max |JAX| per result, the worst result; \"yes\" "
                f"at {AGREE:g} or better. Further apart, both are measured the same way against a float64 run of the same step "
                f"(`jax_enable_x64`): f32 rounding that the program amplifies (a ReLU mask flipping where a "
                f"pre-activation is within rounding of 0, a batch-norm shift's gradient that nearly cancels) moves "
                f"both f32 results away from it; pjc agrees when it is no further from float64 than XLA is (within 2x).\n")
            lines.append(header)
            lines.extend(row(r) for r in results)
            lines.append("")
            ok = [r for r in results if "error" not in r]
            if ok:
                lines.append("Compile times (s): " + "; ".join(
                    f"{r['name']}: jax2pir export {r['export_s']:.1f} ({r['statements']} statements), `pjc compile -o` "
                    f"{r['compile_s']:.1f}, XLA {r['jax_compile_s']:.1f}" for r in ok) + ".\n")
                lines.append("Worst-agreeing result per program: " + "; ".join(
                    f"{r['name']}: `{r['worst']}`" + (f" (from float64: pjc's worst `{r['pjc_worst']}`, XLA's "
                                                      f"`{r['jax_worst']}`)" if r.get("pjc_worst") else "")
                    for r in ok) + ".\n")
            slow.extend(ok)

        if "dp2" in only:
            dp = [attempt("mlp:train_dp2", lambda: exported(a, "mlp", "train_dp2", tmp / "mlp-dp2")),
                  attempt("gpt_block [data=2]", lambda: gpt(a, 2, tmp / "gpt2"))]
            lines.append("## N processes against N host devices (N = 2)\n")
            lines.append(
                "Data parallelism on mesh `[data=2]` (the batch split, the parameters replicated): the executable under "
                "`mpirun --oversubscribe -np 2` (one kernel thread per process on this machine's cores), against JAX "
                "with `XLA_FLAGS=--xla_force_host_platform_device_count=2` and NamedShardings over the 2 host devices "
                "(one process, one thread pool). Both run on the same cores; timed and compared as above (pjc's step: "
                "the slower rank's).\n")
            lines.append(header)
            lines.extend(row(r) for r in dp)
            lines.append("")
            slow.extend(r for r in dp if "error" not in r)

    if slow:
        lines.append("## Where pjc's step goes\n")
        lines.append("From each run's `--trace` (the slowest rank, the steps after the first): the time of its events by category, "
                     "and the plan's steps (`pjc compile --emit plan`, matched to the trace's events in order; "
                     "identical steps summed) taking the most.\n")
        for r in slow:
            lines.append(where_time_goes(r))

    head = (f"# Step time at training sizes: pjc against JAX/XLA (CPU)\n\n"
            f"Measured by `bash scripts/bench-steps.sh{' --quick' if a.quick else ''}` on {cpu_name()}, {threads} cores "
            f"(load average {load_start} at the start, {loadavg()} at the end), "
            f"{time.strftime('%Y-%m-%d')}, pjc at `{revision()}` (release build); BLAS: `PJC_BLAS={os.environ.get('PJC_BLAS', '(unset: the gemm crate)')}`, "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}. "
            f"`scripts/bench_steps.py` says exactly what is timed.\n\n")
    if a.quick:
        head += "**Quick run at reduced sizes (--quick): a check of the script, not a measurement.**\n\n"
    Path(a.out).write_text(head + "\n".join(lines))
    print(head + "\n".join(lines))
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
