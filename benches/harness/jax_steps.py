#!/usr/bin/env python3
"""The JAX side of the step-time benchmark's exported programs (scripts/bench_steps.py).

    python benches/harness/jax_steps.py export MODEL.py PROGRAM DIR [--quick]
    python benches/harness/jax_steps.py time   MODEL.py PROGRAM DIR STEPS COMPARE_AT [--quick]
    python benches/harness/jax_steps.py ref    MODEL.py PROGRAM DIR STEPS COMPARE_AT [--quick]

MODEL.py (benches/mlp/model.py, benches/convnet/model.py, benches/resnet50/model.py)
defines `program(name, quick)`, returning a dict:

- `fn`: the JAX function (a forward pass or a whole training step), plain JAX;
- `args`: its example arguments as arrays (fixed seeds; the same values on both sides);
- `mesh` (a dict such as {"data": 2}, or None) and `in_shardings` (one PartitionSpec or
  None per argument, as jax2pir.export takes them);
- `result_names`: jax2pir's result names (a result named like an argument is carried);
- `carry`: how many leading results feed back into the leading arguments each step;
- `label`: one line saying what the program is.

`export` writes DIR/program.pir (jax2pir.export), DIR/inputs.safetensors (the arguments
under their PIR names) and DIR/meta.json (the mesh's device count, the GFLOP of the
step's products: 2 x multiply-adds of every dot_general and convolution in the jaxpr,
backward pass included).

`time` jits `fn` (with NamedShardings over the mesh's devices: run it with
XLA_FLAGS=--xla_force_host_platform_device_count=N for N > 1), runs two warm-up steps
and then STEPS timed steps (`block_until_ready` each, carried results fed back), and
prints one JSON line: the median and the fastest step in ms, and, when DIR/pjc.safetensors exists (the
executable's --output after COMPARE_AT steps from the same inputs), the largest
difference from it: max over results of max|pjc - jax| / max|jax|, with JAX's results
taken after the same number of steps (COMPARE_AT <= STEPS + 2); those results are
written to DIR/jax.safetensors.

`ref` runs the same COMPARE_AT steps in float64 (jax_enable_x64, the f32 arguments
converted, on one device) and prints how far pjc's results (DIR/pjc.safetensors) and
JAX's f32 results (DIR/jax.safetensors) each are from it, in the same measure. It tells
a real disagreement from f32 rounding that the program amplifies (a ReLU mask flipping
for a pre-activation within rounding of 0 moves a whole weight-gradient column; a
batch-norm shift's gradient is a sum that nearly cancels): then both f32 results are
about equally far from the float64 one.
"""

import argparse
import importlib.util
import inspect
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import jax2pir  # noqa: E402
from jax2pir import safetensors  # noqa: E402


def load(model_py, name, quick):
    spec = importlib.util.spec_from_file_location(Path(model_py).parent.name + "_model", model_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.program(name, quick)


def product_flops(closed):
    """2 x multiply-adds of every dot_general and convolution in a closed jaxpr (and the
    jaxprs nested in its equations: pjit, custom_jvp/vjp, remat)."""
    total = 0
    for eqn in closed.jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lc, _rc), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            k = int(np.prod([lhs[d] for d in lc])) if lc else 1
            total += 2 * int(np.prod(eqn.outvars[0].aval.shape)) * k
        elif name == "conv_general_dilated":
            dn = eqn.params["dimension_numbers"]
            rhs = eqn.invars[1].aval.shape
            # rhs_spec: (out feature dim, in feature dim, spatial dims...)
            spec = dn.rhs_spec
            k = rhs[spec[1]] * int(np.prod([rhs[d] for d in spec[2:]]))
            total += 2 * int(np.prod(eqn.outvars[0].aval.shape)) * k
        for v in eqn.params.values():
            for sub in v if isinstance(v, (list, tuple)) else [v]:
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    total += product_flops(sub)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    total += product_flops(jax.extend.core.ClosedJaxpr(sub, []))
    return total


def arg_names(fn):
    return list(inspect.signature(fn).parameters)


def result_dict(prog, out):
    """{PIR result name: numpy array} for fn's results, named as jax2pir names them."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    res = {}
    for name, o in zip(prog["result_names"], outs):
        leaves = jax.tree_util.tree_leaves(o)
        if len(leaves) == 1 and not isinstance(o, (dict, list, tuple)):
            res[name] = np.asarray(o)
        else:
            for n, leaf in zip(jax2pir.leaf_names(name, o), leaves):
                res[n] = np.asarray(leaf)
    return res


def devices_of(prog):
    n = 1
    for v in (prog.get("mesh") or {}).values():
        n *= v
    return n


def do_export(prog, d):
    d.mkdir(parents=True, exist_ok=True)
    args = prog["args"]
    text = jax2pir.export(prog["fn"], *args, mesh=prog.get("mesh"), in_shardings=prog.get("in_shardings"),
                          result_names=prog["result_names"])
    (d / "program.pir").write_text(text)
    safetensors.write(d / "inputs.safetensors", jax2pir.param_dict(prog["fn"], *args))
    closed = jax.make_jaxpr(prog["fn"])(*args)
    meta = {"devices": devices_of(prog), "gflop": product_flops(closed) / 1e9, "label": prog["label"],
            "statements": text.count(" = "), "carry": prog["carry"]}
    (d / "meta.json").write_text(json.dumps(meta))
    print(json.dumps(meta))


def do_time(prog, d, steps, compare_at):
    n = devices_of(prog)
    args = [jax.tree.map(jax.numpy.asarray, a) for a in prog["args"]]
    if prog.get("mesh"):
        devs = jax.devices()[:n]
        if len(devs) < n:
            sys.exit(f"jax_steps.py: {n} devices needed, JAX has {len(jax.devices())} "
                     f"(set XLA_FLAGS=--xla_force_host_platform_device_count={n})")
        mesh = Mesh(np.array(devs).reshape(tuple(prog["mesh"].values())), tuple(prog["mesh"].keys()))
        specs = prog.get("in_shardings") or (None,) * len(args)
        shardings = tuple(jax.tree.map(lambda _, s=s: NamedSharding(mesh, s if s is not None else P()), a)
                          for s, a in zip(specs, args))
        args = [jax.device_put(a, s) for a, s in zip(args, shardings)]
        f = jax.jit(prog["fn"], in_shardings=shardings)
    else:
        f = jax.jit(prog["fn"])
    t0 = time.perf_counter()
    compiled = f.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    k = prog["carry"]
    cur = list(args)
    done, snapshot, times = 0, None, []
    for i in range(2 + steps):
        t = time.perf_counter()
        out = compiled(*cur)
        jax.block_until_ready(out)
        if i >= 2:
            times.append(time.perf_counter() - t)
        done += 1
        if done == compare_at:
            snapshot = out
        if k:
            cur = list(out[:k]) + cur[k:]
    if snapshot is None:
        snapshot = out
    diff, worst = None, None
    want = result_dict(prog, snapshot)
    safetensors.write(d / "jax.safetensors", want)
    pjc_out = d / "pjc.safetensors"
    if pjc_out.exists():
        diff, worst = rel_diff(safetensors.read(pjc_out), want)
    print(json.dumps({"ms": statistics.median(times) * 1e3, "best_ms": min(times) * 1e3, "rel_diff": diff, "worst": worst,
                      "compile_s": compile_s, "jax": jax.__version__, "devices": n}))


def rel_diff(got, want):
    """(max over results of max|got - want| / max|want|, the result where it is)."""
    diff, worst = 0.0, None
    for name, w in want.items():
        if name not in got:
            sys.exit(f"jax_steps.py: no result {name!r} to compare (there are {sorted(got)[:8]}...)")
        w = np.asarray(w).astype(np.float64)
        scale = float(np.max(np.abs(w))) or 1.0
        e = float(np.max(np.abs(np.asarray(got[name]).astype(np.float64) - w))) / scale
        if e >= diff:
            diff, worst = e, name
    return diff, worst


def do_ref(prog, d, compare_at):
    wide = lambda a: a.astype(np.float64) if np.asarray(a).dtype == np.float32 else a
    cur = [jax.tree.map(lambda a: jax.numpy.asarray(wide(np.asarray(a))), a) for a in prog["args"]]
    f = jax.jit(prog["fn"])
    k = prog["carry"]
    for _ in range(compare_at if k else 1):
        out = f(*cur)
        if k:
            cur = list(out[:k]) + cur[k:]
    ref = result_dict(prog, out)
    pjc_e, pjc_w = rel_diff(safetensors.read(d / "pjc.safetensors"), ref)
    jax_e, jax_w = rel_diff(safetensors.read(d / "jax.safetensors"), ref)
    print(json.dumps({"pjc_vs_f64": pjc_e, "pjc_worst": pjc_w, "jax_vs_f64": jax_e, "jax_worst": jax_w}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["export", "time", "ref"])
    ap.add_argument("model")
    ap.add_argument("program")
    ap.add_argument("dir")
    ap.add_argument("steps", nargs="?", type=int, default=8)
    ap.add_argument("compare_at", nargs="?", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.cmd == "ref":
        jax.config.update("jax_enable_x64", True)
    prog = load(a.model, a.program, a.quick)
    if a.cmd == "export":
        do_export(prog, Path(a.dir))
    elif a.cmd == "time":
        do_time(prog, Path(a.dir), a.steps, a.compare_at)
    else:
        do_ref(prog, Path(a.dir), a.compare_at)


if __name__ == "__main__":
    main()
