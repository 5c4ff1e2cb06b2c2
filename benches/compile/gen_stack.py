#!/usr/bin/env python3
"""A layer stack of about N PIR ops, for the compile-time benchmark (scripts/bench_compile.py).

    python benches/compile/gen_stack.py --ops 1000 DIR      # DIR/stack.pir, DIR/meta.json
    python benches/compile/gen_stack.py --layers 40 DIR     # a given number of layers
    python benches/compile/gen_stack.py --layers 40 --xla   # XLA's compile of the same function

(run with PYTHONPATH=python, in a Python with JAX: scripts/test-jax.sh's .venv-jax.)

The program is a plain JAX function `forward(params, x)` on mesh [data=2, model=2] with
its shardings, exported to PIR by jax2pir. x is [batch, seq, d] with the batch split over
`data`; `layers` layers follow each other, every one with weights of its own:

    x = x + attention(layer_norm(x))          (every --attention-every'th layer)
    x = x + act(layer_norm(x) @ w1 + b1) @ w2 + b2

a Megatron-sharded MLP (w1 [d, hidden] split over `model` on its output dimension, w2
[hidden, d] on its input dimension: a partial sum pjc and XLA all-reduce over `model`);
act is tanh in even layers and GELU (tanh approximation) in odd ones. The attention-like
product splits its heads over `model` (wq, wk, wv by columns, wo by rows) as
examples/jax_gpt does: q k^T over the sequence, a softmax, the product with v. Layer
norms have a gain and a bias (replicated). The shapes are modest (default batch 16,
seq 8, d 64, hidden 256, 4 heads) so that compiling, not data, dominates.

With --ops N the number of layers is chosen so that the exported PIR has N ops within
5%: ops are counted as statements (lines with ` = `) inside the module's functions
(count_ops); the count is linear in the layers within a period of --attention-every, so
two small exports give ops per period, and the layer count found is checked on the real
export (and adjusted a layer at a time when it is off). 1000 ops is about 30 layers.

--xla jits the same function with the same shardings (NamedShardings on 4 host devices:
XLA_FLAGS=--xla_force_host_platform_device_count=4 is set when XLA_FLAGS is unset),
times `lower` and `compile` (no persistent compilation cache) and prints one JSON line.
Run it in a fresh process to time a cold XLA compile.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MESH = {"data": 2, "model": 2}
DEFAULTS = {"batch": 16, "seq": 8, "d": 64, "hidden": 256, "heads": 4, "attention_every": 4}


def count_ops(text):
    """Statements inside the functions of a PIR module: lines with ` = ` between a
    `func` line and its closing `}`."""
    n, inside = 0, False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("func "):
            inside = True
        elif s == "}":
            inside = False
        elif inside and " = " in line:
            n += 1
    return n


def layer_norm(x, g, b, eps=1e-5):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps) * g + b


def attention(x, lp, heads):
    b, t, d = x.shape
    q = (x @ lp["wq"]).reshape(b, t, heads, d // heads)
    k = (x @ lp["wk"]).reshape(b, t, heads, d // heads)
    v = (x @ lp["wv"]).reshape(b, t, heads, d // heads)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * np.float32(1.0 / np.sqrt(d // heads))
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, t, d)
    return o @ lp["wo"]


def make_forward(heads):
    def forward(params, x):
        for i, lp in enumerate(params):
            if "wq" in lp:
                x = x + attention(layer_norm(x, lp["ln0_g"], lp["ln0_b"]), lp, heads)
            h = layer_norm(x, lp["ln1_g"], lp["ln1_b"]) @ lp["w1"] + lp["b1"]
            h = jax.nn.gelu(h, approximate=True) if i % 2 else jnp.tanh(h)
            x = x + h @ lp["w2"] + lp["b2"]
        return x

    return forward


def program(layers, batch=16, seq=8, d=64, hidden=256, heads=4, attention_every=4):
    """{fn, args, mesh, in_shardings, result_names} of a stack of `layers` layers (the
    form benches/*/model.py's program() returns)."""
    r = np.random.default_rng(0)
    f32 = np.float32
    w = lambda *shape: (r.standard_normal(shape) / np.sqrt(shape[0])).astype(f32)
    params, specs = [], []
    for i in range(layers):
        lp = {"ln1_g": np.ones(d, f32), "ln1_b": np.zeros(d, f32), "w1": w(d, hidden), "b1": np.zeros(hidden, f32),
              "w2": w(hidden, d), "b2": np.zeros(d, f32)}
        sp = {"ln1_g": P(), "ln1_b": P(), "w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
        if attention_every and i % attention_every == attention_every - 1:
            lp.update({"ln0_g": np.ones(d, f32), "ln0_b": np.zeros(d, f32),
                       "wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d)})
            sp.update({"ln0_g": P(), "ln0_b": P(), "wq": P(None, "model"), "wk": P(None, "model"),
                       "wv": P(None, "model"), "wo": P("model", None)})
        params.append(lp)
        specs.append(sp)
    x = r.standard_normal((batch, seq, d)).astype(f32)
    return {"fn": make_forward(heads), "args": (params, x), "mesh": dict(MESH), "in_shardings": (specs, P("data")),
            "out_shardings": P("data"), "result_names": ["y"]}


def export(layers, **sizes):
    import jax2pir

    prog = program(layers, **sizes)
    return jax2pir.export(prog["fn"], *prog["args"], mesh=prog["mesh"], in_shardings=prog["in_shardings"],
                          out_shardings=prog["out_shardings"], result_names=prog["result_names"])


def layers_for(ops, **sizes):
    """(layers, PIR text) with count_ops(text) within 5% of `ops` where a layer count can
    reach it."""
    period = sizes.get("attention_every") or 1
    a, b = count_ops(export(period, **sizes)), count_ops(export(2 * period, **sizes))
    per_layer = (b - a) / period
    fixed = a - per_layer * period
    layers = max(1, round((ops - fixed) / per_layer))
    seen = {}
    while layers not in seen:
        text = export(layers, **sizes)
        n = count_ops(text)
        seen[layers] = (n, text)
        if abs(n - ops) <= 0.05 * ops:
            break
        layers = max(1, layers + (1 if n < ops else -1))
    best = min(seen, key=lambda k: abs(seen[k][0] - ops))
    return best, seen[best][1]


def xla_compile(layers, **sizes):
    prog = program(layers, **sizes)
    n = int(np.prod(list(prog["mesh"].values())))
    devs = jax.devices()[:n]
    if len(devs) < n:
        sys.exit(f"gen_stack.py: {n} devices needed, JAX has {len(jax.devices())} "
                 f"(set XLA_FLAGS=--xla_force_host_platform_device_count={n})")
    mesh = Mesh(np.array(devs).reshape(tuple(prog["mesh"].values())), tuple(prog["mesh"]))
    params, x = prog["args"]
    pspecs, xspec = prog["in_shardings"]
    shard = lambda s: NamedSharding(mesh, s)
    in_sh = (jax.tree.map(shard, pspecs, is_leaf=lambda s: isinstance(s, P)), shard(xspec))
    args = (jax.tree.map(lambda a, s: jax.device_put(a, s), params, in_sh[0]), jax.device_put(x, in_sh[1]))
    f = jax.jit(prog["fn"], in_shardings=in_sh, out_shardings=shard(prog["out_shardings"]))
    t0 = time.perf_counter()
    lowered = f.lower(*args)
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return {"lower_s": t1 - t0, "compile_s": t2 - t1, "total_s": t2 - t0, "layers": layers, "devices": n,
            "jax": jax.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="write DIR/stack.pir and DIR/meta.json")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ops", type=int, help="about this many PIR ops (within 5%%)")
    g.add_argument("--layers", type=int, help="exactly this many layers")
    ap.add_argument("--xla", action="store_true", help="time XLA's lower + compile of the same function instead")
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    a = ap.parse_args()
    sizes = {k: getattr(a, k) for k in DEFAULTS}
    if a.xla:
        if a.layers is None:
            a.layers, _ = layers_for(a.ops, **sizes)
        jax.config.update("jax_enable_compilation_cache", False)
        print(json.dumps(xla_compile(a.layers, **sizes)))
        return
    if not a.dir:
        ap.error("DIR is needed (or --xla)")
    t0 = time.perf_counter()
    if a.layers is not None:
        layers, text = a.layers, export(a.layers, **sizes)
    else:
        layers, text = layers_for(a.ops, **sizes)
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "stack.pir").write_text(text)
    meta = {"layers": layers, "ops": count_ops(text), "target_ops": a.ops, "export_s": time.perf_counter() - t0,
            **sizes, "mesh": MESH}
    (d / "meta.json").write_text(json.dumps(meta))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
