#!/usr/bin/env python3
"""Compile time: pjc against JAX/XLA on the same programs, in the same run (issue 17, item 7).

    python scripts/bench_compile.py [--pjc target/release/pjc] [--quick] [--only NAME,...] [--runs 2]
                                    [--out docs/benchmarks-compile.md]

(scripts/bench-compile.sh sets up .venv-jax and a release pjc and calls this with the
venv's Python; PYTHONPATH must reach python/ for jax2pir.) The programs:

- the JAX examples of scripts/bench_jax.py: examples/jax_mlp, jax_gpt, jax_resnet
  `train_step` (their committed PIR; XLA: the example's step function with its
  example arguments and in_shardings, on the example's mesh);
- the real-size programs of scripts/bench_steps.py: ResNet-50 training step, the MLP
  784-2048-2048-10 training step and the small CNN training step (benches/<m>/model.py,
  exported by jax2pir through benches/harness/jax_steps.py; one device), and the GPT
  block forward pass at benches/gpt_block/gen.py's default size (XLA: its JAX twin
  benches/gpt_block/jax_block.py, one device);
- layer stacks of about 1k, 2k, 5k and 10k PIR ops (benches/compile/gen_stack.py:
  layer norm, a Megatron MLP, an attention-like product every 4th layer, weights of
  their own per layer, on mesh [data=2, model=2]; XLA: the same function with the same
  shardings).

For each, every measurement is the wall time of a whole command, the best of --runs
runs (default 2):

- pjc cold: `pjc compile FILE -o OUT --timings` with PJC_CACHE_DIR a fresh, empty
  directory (every run its own); the default targets and threads (every core);
- pjc warm: the same command again with the compile cache the last cold run filled;
- `pjc compile FILE --emit spmd` (the partitioned program, printed to a file): the
  front end without kernel planning and code generation;
- pjc serial (the stacks only): `pjc compile FILE -o OUT -j 1 --no-cache`;
- XLA: `jax.jit(fn, in_shardings=...).lower(*args).compile()` in a fresh Python process
  (JAX's persistent compilation cache off; XLA_FLAGS=--xla_force_host_platform_device_count=N
  for a mesh of N devices), timed inside that process from `lower` to the end of
  `compile` (tracing included, interpreter start and imports not);
- plan kernel counts: the `--timings` lines of the best cold run (per target: kernels
  in the plan, distinct ones, compiled, taken from the cache).

PIR ops: statements (lines with ` = `) inside the module's functions. Results go to a
markdown report (--out); a program that fails to export or compile is a row saying so,
with the error in full below the tables. --quick: jax_mlp and the 1k stack only, the
report in /tmp/benchmarks-compile-quick.md unless --out is given. A benchmark, never a
test: nothing fails on slowness.
"""

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STACK_OPS = [1000, 2000, 5000, 10000]

_spec = importlib.util.spec_from_file_location("gen_stack", ROOT / "benches/compile/gen_stack.py")
count_ops = None  # gen_stack.count_ops, loaded in main() (it imports JAX)

# Runs in a fresh interpreter: prints one JSON line {lower_s, compile_s, total_s, jax}.
XLA_SIDE = r'''
import importlib.util, json, sys, time
from pathlib import Path
import jax, numpy as np
jax.config.update("jax_enable_compilation_cache", False)
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
job = json.loads(sys.argv[1])

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def shardings(mesh_d, ins, args):
    """NamedShardings for args: per argument None or one PartitionSpec, or a pytree of them."""
    n = int(np.prod(list(mesh_d.values())))
    if len(jax.devices()) < n:
        sys.exit(f"{n} devices needed, JAX has {len(jax.devices())}")
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(tuple(mesh_d.values())), tuple(mesh_d.keys()))
    ins = ins or (None,) * len(args)
    leaf = lambda x: x is None or isinstance(x, P)
    def one(s, a):
        if leaf(s):
            return jax.tree.map(lambda _: NamedSharding(mesh, s if s is not None else P()), a)
        return jax.tree.map(lambda sp, _: NamedSharding(mesh, sp if sp is not None else P()), s, a, is_leaf=leaf)
    return tuple(one(s, a) for s, a in zip(ins, args))

if job["kind"] == "example":          # examples/jax_*/model.py: FN, FN_example_args, FN_export_options
    d = Path(job["dir"])
    sys.path.insert(0, str(d))
    model = load(d / "model.py", "model")
    fn = getattr(model, job["fn"])
    args = getattr(model, job["fn"] + "_example_args")()
    opts = getattr(model, job["fn"] + "_export_options", lambda: {})()
    mesh_d, ins = opts.get("mesh"), opts.get("in_shardings")
elif job["kind"] == "model":          # benches/<m>/model.py: program(name)
    prog = load(job["model"], "bench_model").program(job["program"])
    fn, args, mesh_d, ins = prog["fn"], prog["args"], prog.get("mesh"), prog.get("in_shardings")
elif job["kind"] == "gpt":            # benches/gpt_block/jax_block.py's block at gen.py's sizes
    fn = load(job["jax_block"], "jax_block").block
    b, s, d, h, f = job["sizes"]
    shapes = [[b, s, d], [d, h, d // h], [d, h, d // h], [d, h, d // h], [h, d // h, d], [d, f], [f, d]]
    args = [jax.ShapeDtypeStruct(tuple(sh), np.float32) for sh in shapes]
    mesh_d, ins = None, None
else:
    sys.exit(f"unknown kind {job['kind']}")
if mesh_d:
    sh = shardings(mesh_d, ins, args)
    args = tuple(jax.device_put(a, s) for a, s in zip(args, sh))
    jitted = jax.jit(fn, in_shardings=sh)
else:
    jitted = jax.jit(fn)
t0 = time.perf_counter()
lowered = jitted.lower(*args)
t1 = time.perf_counter()
lowered.compile()
t2 = time.perf_counter()
print(json.dumps({"lower_s": t1 - t0, "compile_s": t2 - t1, "total_s": t2 - t0, "jax": jax.__version__}))
'''


class Failed(Exception):
    pass


def clean_env(extra=None):
    e = dict(os.environ)
    for k in ["PJC_CACHE", "PJC_CACHE_DIR", "PJC_JOBS", "JAX_COMPILATION_CACHE_DIR", "XLA_FLAGS"]:
        e.pop(k, None)
    e["PYTHONPATH"] = str(ROOT / "python") + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e["JAX_PLATFORMS"] = "cpu"
    e.update(extra or {})
    return e


def run(cmd, env=None, what=None, stdout=None):
    """(wall s, stdout, stderr) of a command; Failed when it exits non-zero."""
    t = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=clean_env(env))
    wall = time.perf_counter() - t
    if r.returncode != 0:
        msg = (r.stderr or r.stdout or "").strip()
        raise Failed(f"{what or cmd[0]} exited with {r.returncode}: {msg[-2000:]}")
    return wall, r.stdout if stdout is None else "", r.stderr


def parse_timings(stderr):
    """{"stages": {name: ms}, "targets": [(target, total, distinct, compiled, cached, thread ms)], "threads": n}
    of `pjc compile --timings` output."""
    stages, targets, threads = {}, [], None
    inside = False
    for line in stderr.splitlines():
        if line.startswith("pjc compile timings"):
            inside = True
            continue
        m = re.match(r"\s+(\S+)\s+kernels: (\d+) total, (\d+) distinct; (\d+) compiled, (\d+) cached; ([\d.]+) ms", line)
        if m:
            targets.append((m.group(1), *map(int, m.group(2, 3, 4, 5)), float(m.group(6))))
            continue
        m = re.match(r"code generation: (\d+) thread", line)
        if m:
            threads = int(m.group(1))
            inside = False
            continue
        m = re.match(r"  (\S.*?)\s+([\d.]+)$", line)
        if inside and m:
            stages[m.group(1)] = float(m.group(2))
    return {"stages": stages, "targets": targets, "threads": threads, "text": stderr.strip()}


def best_of(n, f):
    """The run with the lowest wall time of n calls of f() -> (wall, ...)."""
    runs = [f(i) for i in range(n)]
    return min(runs, key=lambda r: r[0])


def measure_pjc(a, pir, work, serial):
    out = {}
    exe = work / "out.bin"

    def cold(i):
        cache = work / f"cache-cold{i}"
        shutil.rmtree(cache, ignore_errors=True)
        wall, _, err = run([a.pjc, "compile", pir, "-o", exe, "--timings"], env={"PJC_CACHE_DIR": str(cache)},
                           what="pjc compile -o (cold)")
        return wall, parse_timings(err), cache

    out["cold"], out["cold_timings"], cache = best_of(a.runs, cold)
    # The warm runs reuse the cache of the last cold run (the best one's is just as full).
    cache = work / f"cache-cold{a.runs - 1}"
    warm = best_of(a.runs, lambda i: run([a.pjc, "compile", pir, "-o", exe, "--timings"],
                                         env={"PJC_CACHE_DIR": str(cache)}, what="pjc compile -o (warm)"))
    out["warm"], out["warm_timings"] = warm[0], parse_timings(warm[2])
    for i in range(a.runs):
        shutil.rmtree(work / f"cache-cold{i}", ignore_errors=True)

    def spmd(i):
        with open(work / "spmd.txt", "w") as f:
            return run([a.pjc, "compile", pir, "--emit", "spmd"], what="pjc compile --emit spmd", stdout=f)

    out["spmd"] = best_of(a.runs, spmd)[0]
    if serial:
        r = best_of(a.runs, lambda i: run([a.pjc, "compile", pir, "-o", exe, "-j", "1", "--no-cache", "--timings"],
                                          what="pjc compile -o -j 1 --no-cache"))
        out["serial"], out["serial_timings"] = r[0], parse_timings(r[2])
    exe.unlink(missing_ok=True)
    return out


def measure_xla(a, cmd, devices):
    env = {"XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"} if devices > 1 else {}

    def one(i):
        _, stdout, _ = run(cmd, env=env, what="the XLA side")
        r = json.loads(stdout.strip().splitlines()[-1])
        return r["total_s"], r

    return best_of(a.runs, one)[1]


def mesh_devices(pir_text):
    m = re.search(r"^mesh \[(.*)\]", pir_text, re.M)
    n = 1
    for v in re.findall(r"=(\d+)", m.group(1)) if m else []:
        n *= int(v)
    return n


def programs(a):
    """[(name, group, prepare(work) -> (pir path, info dict), xla command(info) -> argv)]"""
    py = a.python
    xla_job = lambda job: [py, "-c", XLA_SIDE, json.dumps(job)]
    out = []
    for ex, fn, pir in [("jax_mlp", "train_step", "mlp.pir"), ("jax_gpt", "train_step", "gpt.pir"),
                        ("jax_resnet", "train_step", "resnet18_small.pir")]:
        d = ROOT / "examples" / ex
        out.append((f"{ex}:{fn}", "examples", lambda work, d=d, pir=pir: (d / pir, {"source": f"examples/{d.name}/{pir}",
                                                                               "label": "the example's training step (its committed export)"}),
                    lambda info, d=d, fn=fn: xla_job({"kind": "example", "dir": str(d), "fn": fn})))
    harness = ROOT / "benches/harness/jax_steps.py"
    for m, p in [("resnet50", "train"), ("mlp", "train"), ("convnet", "train")]:
        mpy = ROOT / "benches" / m / "model.py"

        def prep(work, m=m, p=p, mpy=mpy):
            wall, stdout, _ = run([py, harness, "export", mpy, p, work], what="jax2pir export (jax_steps.py)")
            meta = json.loads(stdout.strip().splitlines()[-1])
            return work / "program.pir", {"source": f"benches/{m}/model.py {p}", "export_s": wall, "label": meta["label"]}

        out.append((f"{m}:{p}", "real-size", prep,
                    lambda info, m=m, p=p, mpy=mpy: xla_job({"kind": "model", "model": str(mpy), "program": p})))
    sizes = [8, 256, 512, 8, 2048]  # benches/gpt_block/gen.py's defaults

    def gpt_prep(work):
        wall, _, _ = run([py, ROOT / "benches/gpt_block/gen.py", work], what="benches/gpt_block/gen.py")
        b, s, d, h, f = sizes
        return work / "block.pir", {"source": "benches/gpt_block/gen.py", "export_s": wall,
                                    "label": f"GPT block forward [{b},{s},{d}], {h} heads, MLP {f}"}

    out.append(("gpt_block:forward", "real-size", gpt_prep,
                lambda info: xla_job({"kind": "gpt", "jax_block": str(ROOT / "benches/gpt_block/jax_block.py"),
                                      "sizes": sizes})))
    gen = ROOT / "benches/compile/gen_stack.py"
    for n in STACK_OPS:
        def stack_prep(work, n=n):
            wall, stdout, _ = run([py, gen, "--ops", n, work], what="benches/compile/gen_stack.py")
            meta = json.loads(stdout.strip().splitlines()[-1])
            return work / "stack.pir", {"source": f"benches/compile/gen_stack.py --ops {n}", "export_s": wall,
                                        "layers": meta["layers"], "label": f"{meta['layers']} layers"}

        out.append((f"stack_{n // 1000}k", "stacks", stack_prep,
                    lambda info: [py, gen, "--layers", info["layers"], "--xla"]))
    return out


def fmt(x, digits=2):
    return "" if x is None else f"{x:.{digits}f}"


def ratio(x, y):
    return f"{x / y:.2f}" if x is not None and y else ""


def kernels_cell(t):
    """total/distinct of the first target; the other targets where they differ."""
    if not t or not t["targets"]:
        return ""
    first = t["targets"][0]
    cell = f"{first[1]} / {first[2]}"
    others = [f"{x[0]} {x[1]} / {x[2]}" for x in t["targets"][1:] if (x[1], x[2]) != (first[1], first[2])]
    return cell + (f" ({'; '.join(others)})" if others else "")


# The machine description the step-time benchmark writes into its report (standard
# library only at import).
_spec_steps = importlib.util.spec_from_file_location("bench_steps", ROOT / "scripts/bench_steps.py")
_steps = importlib.util.module_from_spec(_spec_steps)
_spec_steps.loader.exec_module(_steps)
cpu_name, loadavg, revision = _steps.cpu_name, _steps.loadavg, _steps.revision


def main():
    global count_ops
    ap = argparse.ArgumentParser()
    ap.add_argument("--pjc", default=str(ROOT / "target/release/pjc"))
    ap.add_argument("--python", default=sys.executable, help="a Python with JAX and jax2pir (default: this one)")
    ap.add_argument("--runs", type=int, default=2, help="runs per measurement, the best kept")
    ap.add_argument("--quick", action="store_true", help="jax_mlp and the 1k-op stack only")
    ap.add_argument("--only", help="comma-separated substrings of program names (jax_mlp, resnet50, stack_10k, ...)")
    ap.add_argument("--out", default=None, help="the report (default docs/benchmarks-compile.md; "
                                               "/tmp/benchmarks-compile-quick.md with --quick)")
    a = ap.parse_args()
    a.out = a.out or ("/tmp/benchmarks-compile-quick.md" if a.quick else str(ROOT / "docs/benchmarks-compile.md"))
    gen_stack = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(gen_stack)
    count_ops = gen_stack.count_ops
    progs = programs(a)
    if a.quick:
        progs = [p for p in progs if p[0] in ("jax_mlp:train_step", "stack_1k")]
    if a.only:
        want = [w.strip() for w in a.only.split(",") if w.strip()]
        progs = [p for p in progs if any(w in p[0] for w in want)]
    if not progs:
        sys.exit(f"bench_compile.py: --only {a.only} names no program; nothing written")
    load_start = loadavg()
    pjc_version = subprocess.run([a.pjc, "--version"], capture_output=True, text=True).stdout.strip() or "?"
    results = []
    with tempfile.TemporaryDirectory(prefix="pjc-bench-compile-") as tmp:
        for name, group, prep, xla_cmd in progs:
            work = Path(tmp) / name.replace(":", "-")
            work.mkdir(parents=True)
            r = {"name": name, "group": group, "errors": {}}
            print(f"bench_compile.py: {name} ...", file=sys.stderr, flush=True)
            try:
                pir, info = prep(work)
                r.update(info)
                text = Path(pir).read_text()
                r["ops"], r["devices"] = count_ops(text), mesh_devices(text)
            except Exception as e:  # one failing program is a row, not the end
                r["errors"]["export"] = str(e)
                print(f"bench_compile.py: {name}: export FAILED: {e}", file=sys.stderr, flush=True)
                results.append(r)
                continue
            try:
                r["pjc"] = measure_pjc(a, pir, work, serial=group == "stacks")
            except Exception as e:
                r["errors"]["pjc"] = str(e)
                print(f"bench_compile.py: {name}: pjc FAILED: {e}", file=sys.stderr, flush=True)
            try:
                r["xla"] = measure_xla(a, xla_cmd(r), r["devices"])
            except Exception as e:
                r["errors"]["xla"] = str(e)
                print(f"bench_compile.py: {name}: XLA FAILED: {e}", file=sys.stderr, flush=True)
            p, x = r.get("pjc", {}), r.get("xla", {})
            print(f"bench_compile.py: {name}: {r['ops']} ops; pjc cold {fmt(p.get('cold'))} s, warm {fmt(p.get('warm'))} s, "
                  f"--emit spmd {fmt(p.get('spmd'), 3)} s, serial {fmt(p.get('serial'))} s; XLA {fmt(x.get('total_s'))} s",
                  file=sys.stderr, flush=True)
            results.append(r)
    Path(a.out).write_text(report(a, results, load_start, pjc_version))
    print(Path(a.out).read_text())
    print(f"wrote {a.out}", file=sys.stderr)


def reading(results):
    """'Reading it': where pjc is slower than the goal (cold <= 0.5x XLA) and what its
    code generation costs per kernel, from this run's numbers."""
    both = [r for r in results if r.get("pjc") and r.get("xla")]
    if not both:
        return []
    goal = [r for r in both if r["pjc"]["cold"] <= 0.5 * r["xla"]["total_s"]]
    slower = [r for r in both if r["pjc"]["cold"] > r["xla"]["total_s"]]
    between = [r for r in both if r not in goal and r not in slower]
    names = lambda rs: ", ".join(f"{r['name']} ({r['pjc']['cold'] / r['xla']['total_s']:.2f}x)" for r in rs) or "none"
    per_kernel = []
    for r in both:
        for t in r["pjc"]["cold_timings"]["targets"]:
            if t[3]:
                per_kernel.append(t[5] / t[3])
    ms = sorted(per_kernel)[len(per_kernel) // 2] if per_kernel else float("nan")
    warm = max(r["pjc"]["warm"] / r["xla"]["total_s"] for r in both)
    return [
        "### Reading it\n",
        f"- **Cold, at or under the goal of 0.5x XLA:** {names(goal)}.",
        f"- **Cold, slower than the goal but faster than XLA:** {names(between)}.",
        f"- **Cold, slower than XLA:** {names(slower)}.",
        f"- **Why cold compiles of models are slower:** nearly all of a cold compile is LLVM, and LLVM takes about "
        f"{ms:.0f} ms per distinct kernel and target (the median over this run's programs of thread time per compiled "
        "kernel), a few ms of it fixed per module. pjc pays that for every distinct kernel on each of its default "
        "targets (this machine's x86-64 level, x86-64-v2 and sm_90 PTX), while XLA compiles CPU code for one "
        "target. Each kernel is its own module so that the artefact is the same with or without the cache; "
        "deduplication makes layer stacks nearly free (their kernels repeat), but a ResNet has hundreds of distinct "
        "kernels. `--target cpu` drops the PTX and `--cpu-levels native` the second x86 build.",
        f"- **Warm** (every kernel from the cache) pjc is at most {warm:.2f}x XLA on every program here.\n",
    ]


def report(a, results, load_start, pjc_version):
    jax_v = next((r["xla"]["jax"] for r in results if "xla" in r), "?")
    threads = next((r["pjc"]["cold_timings"]["threads"] for r in results if "pjc" in r), None)
    first_target = next((r["pjc"]["cold_timings"]["targets"] for r in results if "pjc" in r and r["pjc"]["cold_timings"]["targets"]), [])
    target_names = ", ".join(t[0] for t in first_target) or "?"
    lines = [
        "# Compile time: pjc against JAX/XLA (CPU)\n",
        f"Measured by `bash scripts/bench-compile.sh{' --quick' if a.quick else ''}` (`scripts/bench_compile.py`, whose "
        f"docstring says exactly what is timed) on {cpu_name()}, `nproc` {os.cpu_count()}, "
        f"{time.strftime('%Y-%m-%d')}; load average {load_start} at the start, {loadavg()} at the end (a shared "
        f"machine); {pjc_version} (release build) at `{revision()}`, JAX/jaxlib {jax_v}, Python {platform.python_version()}.\n",
        f"What is timed: the wall time of each whole command, **the best of {a.runs} runs**. *pjc cold*: "
        f"`pjc compile FILE -o OUT` with `PJC_CACHE_DIR` a fresh empty directory; *warm*: the same command again on "
        f"the cache the cold run filled; *spmd*: `pjc compile FILE --emit spmd` (parse, expansion, sharding "
        f"propagation and partitioning, the partitioned program printed to a file; no kernels). pjc's default "
        f"targets ({target_names}: the host kernels for this machine's level and for x86-64-v2, and PTX) on "
        f"{threads or '?'} code-generation threads (every core). *XLA*: `jax.jit(fn, in_shardings=...).lower(*args)"
        f".compile()` in a fresh process (no persistent compilation cache; "
        f"`XLA_FLAGS=--xla_force_host_platform_device_count=N` for a mesh of N devices), from `lower` to the end of "
        f"`compile`, CPU code only. Kernels: the plan's kernels per target from `--timings`, total / distinct "
        f"(after deduplication; the first target, others where they differ). Ratios are pjc / XLA (below 1: pjc "
        f"compiles faster). PIR ops: statements inside the module's functions.\n",
        "| program | PIR ops | mesh devices | kernels total / distinct | pjc cold s | pjc warm s | `--emit spmd` s | XLA s | pjc / XLA cold | pjc / XLA warm |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    failures = []
    for r in results:
        p, x = r.get("pjc"), r.get("xla")
        if "export" in r["errors"]:
            lines.append(f"| {r['name']} | | | | failed to export (below) | | | | | |")
            failures.append((r["name"], "export", r["errors"]["export"]))
            continue
        pc = [kernels_cell(p["cold_timings"]), fmt(p["cold"]), fmt(p["warm"]), fmt(p["spmd"], 3)] if p else \
            ["", "failed (below)", "", ""]
        xc = fmt(x["total_s"]) if x else "failed (below)"
        lines.append(f"| {r['name']} | {r['ops']} | {r['devices']} | {' | '.join(pc)} | {xc} "
                     f"| {ratio(p and p['cold'], x and x['total_s'])} | {ratio(p and p['warm'], x and x['total_s'])} |")
        for what in ("pjc", "xla"):
            if what in r["errors"]:
                failures.append((r["name"], what, r["errors"][what]))
    lines.append("")

    lines += reading(results)

    stacks = [r for r in results if r["group"] == "stacks" and r.get("pjc")]
    if stacks:
        lines += [
            "## Growth: layer stacks\n",
            "`benches/compile/gen_stack.py --ops N`: layers of layer norm + a Megatron MLP (w1 split over `model` "
            "on its output dimension, tanh or GELU, w2 split on its input dimension, residual), an attention-like "
            "product (heads split over `model`) every 4th layer, every layer with weights of its own; batch 16, "
            "seq 8, d 64, hidden 256, mesh [data=2, model=2], the batch split over `data`. *serial*: "
            "`pjc compile FILE -o OUT -j 1 --no-cache` (one code-generation thread, no cache). Per-op times are "
            "the command's wall time over the PIR ops.\n",
            "| stack | layers | PIR ops | kernels total / distinct | `--emit spmd` s | spmd µs/op | pjc cold s | cold µs/op | pjc warm s | serial s | serial / cold | XLA s | XLA µs/op |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in stacks:
            p, x = r["pjc"], r.get("xla")
            us = lambda s: f"{s / r['ops'] * 1e6:.0f}" if s else ""
            lines.append(f"| {r['name']} | {r['layers']} | {r['ops']} | {kernels_cell(p['cold_timings'])} | {fmt(p['spmd'], 3)} "
                         f"| {us(p['spmd'])} | {fmt(p['cold'])} | {us(p['cold'])} | {fmt(p['warm'])} | {fmt(p.get('serial'))} "
                         f"| {ratio(p.get('serial'), p['cold'])} | {fmt(x and x['total_s'])} | {us(x and x['total_s'])} |")
        lo, hi = stacks[0], stacks[-1]
        if hi is not lo:
            per = lambda r, k: r["pjc"][k] / r["ops"]
            grow = hi["ops"] / lo["ops"]
            parts = [f"from {lo['name']} to {hi['name']} ({grow:.1f}x the ops) the time per op of `--emit spmd` changes "
                     f"{per(hi, 'spmd') / per(lo, 'spmd'):.2f}x, of a cold compile {per(hi, 'cold') / per(lo, 'cold'):.2f}x, "
                     f"of a warm one {per(hi, 'warm') / per(lo, 'warm'):.2f}x"]
            if lo.get("xla") and hi.get("xla"):
                parts.append(f"XLA's {hi['xla']['total_s'] / hi['ops'] / (lo['xla']['total_s'] / lo['ops']):.2f}x")
            lines.append("\nGrowth: " + "; ".join(parts) + " (1.0: linear in the ops; "
                         f"{grow:.0f}: quadratic).\n")
        lines.append("")

    lines += ["## Where pjc's compile goes\n",
              "`--timings` of the best cold run, ms of wall clock per stage (code generation: all targets, on every core).\n"]
    stage_names = []
    for r in results:
        for s in (r.get("pjc") or {}).get("cold_timings", {}).get("stages", {}):
            if s not in stage_names:
                stage_names.append(s)
    if stage_names:
        lines.append("| program | " + " | ".join(stage_names) + " |")
        lines.append("|---|" + "---:|" * len(stage_names))
        for r in results:
            st = (r.get("pjc") or {}).get("cold_timings", {}).get("stages")
            if st:
                lines.append(f"| {r['name']} | " + " | ".join(fmt(st.get(s), 1) for s in stage_names) + " |")
        lines.append("")
    big = [r for r in results if r.get("pjc")]
    if big:
        r = max(big, key=lambda r: r["ops"])
        lines += [f"The full `--timings` output of {r['name']}'s best cold run ({r['ops']} ops), then a warm one"
                  + (" and the serial one" if r["pjc"].get("serial_timings") else "") + ":\n", "```",
                  r["pjc"]["cold_timings"]["text"], "```", "```", r["pjc"]["warm_timings"]["text"], "```"]
        if r["pjc"].get("serial_timings"):
            lines += ["```", r["pjc"]["serial_timings"]["text"], "```"]
        lines.append("")

    lines += ["## Programs\n", "| program | source | what | export s | XLA lower s | XLA compile s |", "|---|---|---|---:|---:|---:|"]
    for r in results:
        x = r.get("xla") or {}
        lines.append(f"| {r['name']} | `{r.get('source', '')}` | {r.get('label', '')} | {fmt(r.get('export_s'), 1)} "
                     f"| {fmt(x.get('lower_s'))} | {fmt(x.get('compile_s'))} |")
    lines.append("")
    if failures:
        lines.append("## Failures\n")
        for name, what, err in failures:
            lines += [f"{name}, {what}:\n", "```", err.strip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
