#!/usr/bin/env python3
"""The JAX twin of benches/gpt_block/gen.py's block.pir, for the step-time benchmark.

    python benches/gpt_block/jax_block.py DIR STEPS [DEVICES]

reads DIR/inputs.safetensors, jits the same block on one device (or, with DEVICES = N >
1, data-parallel over N devices: x split along the batch by a NamedSharding on a mesh
`data`, the weights replicated; run it with
XLA_FLAGS=--xla_force_host_platform_device_count=N), checks its result
against DIR/pjc.safetensors when present (pjc's output; rtol 1e-4 of the largest
magnitude), and prints one JSON line: the median (and the fastest) step time over STEPS
steps after two warm-up steps, and the largest difference from pjc.
"""

import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir.safetensors import read as load  # noqa: E402  (numpy only)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc * jax.lax.rsqrt(var + 1e-5)


def block(x, wq, wk, wv, wo, w1, w2):
    xn = layer_norm(x)
    q = jnp.einsum("bsd,dhk->bshk", xn, wq)
    k = jnp.einsum("bsd,dhk->bshk", xn, wk)
    v = jnp.einsum("bsd,dhk->bshk", xn, wv)
    s = jnp.einsum("bshk,bthk->bhst", q, k) * (1.0 / np.sqrt(q.shape[-1]))
    p = jax.nn.softmax(s, axis=-1)
    c = jnp.einsum("bhst,bthk->bhsk", p, v)
    o = jnp.einsum("bhsk,hkd->bsd", c, wo)
    h = x + o
    u = jnp.tanh(layer_norm(h) @ w1)
    return h + u @ w2


def main():
    d, steps = Path(sys.argv[1]), int(sys.argv[2])
    ins = load(d / "inputs.safetensors")
    args = [jnp.asarray(ins[n]) for n in ["x", "wq", "wk", "wv", "wo", "w1", "w2"]]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if n > 1:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        if len(jax.devices()) < n:
            sys.exit(f"jax_block.py: {n} devices needed; set XLA_FLAGS=--xla_force_host_platform_device_count={n}")
        mesh = Mesh(np.array(jax.devices()[:n]), ("data",))
        sh = [NamedSharding(mesh, P("data"))] + [NamedSharding(mesh, P())] * 6
        args = [jax.device_put(a, s) for a, s in zip(args, sh)]
        f = jax.jit(block, in_shardings=tuple(sh))
    else:
        f = jax.jit(block)
    for _ in range(2):
        f(*args).block_until_ready()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        out = f(*args).block_until_ready()
        times.append(time.perf_counter() - t)
    times.sort()
    diff = None
    if (d / "pjc.safetensors").exists():
        want = np.asarray(out)
        got = load(d / "pjc.safetensors")["out"]
        diff = float(np.max(np.abs(want - got)) / np.max(np.abs(want)))
        if diff > 1e-4:
            print(f"jax_block.py: pjc differs from JAX by {diff} of the largest magnitude", file=sys.stderr)
            sys.exit(1)
    print(json.dumps({"ms": times[len(times) // 2] * 1e3, "best_ms": times[0] * 1e3, "rel_diff": diff, "jax": jax.__version__}))


if __name__ == "__main__":
    main()
