"""Collective bytes and peak memory per device of one Adam step of a 2-layer MLP
on 4 devices, in three layouts, from pjc and from XLA on the same program.

    (a) replicated  weights and Adam state (m, v) replicated: data parallel
    (b) zero        weights replicated, m and v split over data (ZeRO-1/2)
    (c) fsdp        weights, m and v split over data (FSDP)

pjc: `pjc explain examples/zero/VARIANT.pir` — its collective total (bytes each
device sends, ring formulas) and its peak memory per device (parameters, results
and live temporaries of the buffer plan).

XLA: the same step written in JAX (`step` below: the same loss, the same Adam
update without bias correction, the same constants), `jax.jit` with
NamedShardings on a mesh of 4 host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4); its bytes are the
collectives of the compiled HLO with the same ring formulas
(scripts/bench_jax.py's `xla_collective_bytes`), its memory
`compiled.memory_analysis()`: arguments + outputs + temporaries − aliased, per
device.

It also checks that the two programs are the same step: `pjc eval` of
examples/zero/replicated.pir and the jitted JAX step of each layout agree on the
same inputs (within 1e-4 relative).

    .venv-jax/bin/python benches/zero/bench.py [--pjc target/debug/pjc] [--write]

--write replaces the table in docs/benchmarks.md (between the zero-bench markers).
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ["replicated", "zero", "fsdp"]
TITLES = {
    "replicated": "(a) data parallel: weights and state replicated",
    "zero": "(b) ZeRO: state (m, v) on [data, _]",
    "fsdp": "(c) FSDP: weights and state on [data, _]",
}
SHAPES = {"x": (512, 128), "labels": (512, 16), "w1": (128, 256), "w2": (256, 16)}
PARAMS = ["x", "labels", "w1", "w2", "m1", "v1", "m2", "v2"]
RESULTS = ["loss", "w1", "w2", "m1", "v1", "m2", "v2"]

spec = importlib.util.spec_from_file_location("bench_jax", REPO / "scripts" / "bench_jax.py")
bench_jax = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_jax)


def loss(w1, w2, x, labels):
    h = jnp.maximum(x @ w1, 0.0)
    logits = h @ w2
    shifted = logits - jnp.max(logits, axis=1, keepdims=True)
    logp = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
    return -jnp.sum(labels * logp) / x.shape[0]


def adam(w, g, m, v):
    mn = 0.9 * m + 0.1 * g
    vn = 0.999 * v + 0.001 * (g * g)
    return w - 0.001 * (mn / (jnp.sqrt(vn) + 1e-8)), mn, vn


def step(x, labels, w1, w2, m1, v1, m2, v2):
    l, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, labels)
    w1n, m1n, v1n = adam(w1, g1, m1, v1)
    w2n, m2n, v2n = adam(w2, g2, m2, v2)
    return l, w1n, w2n, m1n, v1n, m2n, v2n


def inputs():
    rng = np.random.default_rng(0)
    shapes = dict(SHAPES, m1=SHAPES["w1"], v1=SHAPES["w1"], m2=SHAPES["w2"], v2=SHAPES["w2"])
    ranges = {"x": (-1, 1), "labels": (0, 1), "w1": (-0.1, 0.1), "w2": (-0.1, 0.1),
              "m1": (-1e-3, 1e-3), "m2": (-1e-3, 1e-3), "v1": (1e-7, 1e-5), "v2": (1e-7, 1e-5)}
    return {n: rng.uniform(*ranges[n], size=shapes[n]).astype(np.float32) for n in PARAMS}


def specs(variant):
    batch = P("data", None)
    w = P("data", None) if variant == "fsdp" else P()
    s = P("data", None) if variant in ("zero", "fsdp") else P()
    ins = {"x": batch, "labels": batch, "w1": w, "w2": w, "m1": s, "v1": s, "m2": s, "v2": s}
    outs = {"loss": P(), "w1": w, "w2": w, "m1": s, "v1": s, "m2": s, "v2": s}
    return [ins[n] for n in PARAMS], [outs[n] for n in RESULTS]


def xla_side(variant, args):
    mesh = Mesh(np.array(jax.devices()[:4]), ("data",))
    ins, outs = specs(variant)
    ins = [NamedSharding(mesh, s) for s in ins]
    outs = tuple(NamedSharding(mesh, s) for s in outs)
    jitted = jax.jit(step, in_shardings=ins, out_shardings=outs)
    dev_args = [jax.device_put(args[n], s) for n, s in zip(PARAMS, ins)]
    compiled = jitted.lower(*dev_args).compile()
    hlo = compiled.as_text()
    b, count = bench_jax.xla_collective_bytes(hlo, 4)
    kinds = sorted(set(re.findall(r" (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(", hlo)))
    ma = compiled.memory_analysis()
    peak = ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes - ma.alias_size_in_bytes
    results = [np.asarray(r) for r in compiled(*dev_args)]
    return {"bytes": b, "count": count, "kinds": kinds, "peak": peak, "results": dict(zip(RESULTS, results))}


def pjc_side(pjc, variant):
    out = subprocess.run([pjc, "explain", f"examples/zero/{variant}.pir"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    section = out.split("collectives inserted by the partitioner", 1)[1]
    m = re.search(r"total: (\d+) collectives?, (\d+) B per device", section)
    kinds = sorted(set(re.findall(r"^\s+%\S+\s+(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute)\s", section, re.M)))
    peak = int(re.search(r"peak memory per device: (\d+) bytes", out).group(1))
    return {"bytes": int(m.group(2)), "count": int(m.group(1)), "kinds": kinds, "peak": peak}


def pjc_eval(pjc, args, work):
    flags = []
    for n in PARAMS:
        p = Path(work) / f"{n}.npy"
        np.save(p, args[n])
        flags += ["--input", f"{n}={p}"]
    out = Path(work) / "out"
    subprocess.run([pjc, "eval", "examples/zero/replicated.pir", *flags, "--output", str(out)], cwd=REPO, check=True, capture_output=True)
    return {n: np.load(out / f"{n}.npy") for n in RESULTS}


def table(rows):
    lines = [
        "| layout | pjc collective B/device (count) | XLA collective B/device (count) | ratio | pjc / XLA collectives | pjc peak B/device | XLA peak B/device | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v, p, x in rows:
        lines.append(
            f"| {TITLES[v]} | {p['bytes']} ({p['count']}) | {x['bytes']} ({x['count']}) | {p['bytes'] / x['bytes']:.2f} "
            f"| {', '.join(p['kinds'])} / {', '.join(x['kinds'])} | {p['peak']} | {x['peak']} | {p['peak'] / x['peak']:.2f} |"
        )
    a = rows[0][1]["bytes"]
    lines.append("")
    lines.append("pjc's bytes against its data-parallel step (a): " + ", ".join(f"{v} {p['bytes'] / a:.2f}x" for v, p, _ in rows) + ".")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pjc", default=str(REPO / "target" / "debug" / "pjc"))
    ap.add_argument("--write", action="store_true", help="replace the table in docs/benchmarks.md")
    ap.add_argument("--json", action="store_true", help="print the measurements as JSON too")
    a = ap.parse_args()
    args = inputs()
    with tempfile.TemporaryDirectory() as work:
        want = pjc_eval(a.pjc, args, work)
    rows = []
    for v in VARIANTS:
        x = xla_side(v, args)
        for n in RESULTS:
            np.testing.assert_allclose(x["results"][n], want[n], rtol=1e-4, atol=1e-6, err_msg=f"{v}: {n}: JAX and pjc eval differ")
        rows.append((v, pjc_side(a.pjc, v), x))
    t = table(rows)
    print(t)
    if a.json:
        print(json.dumps([{"variant": v, "pjc": p, "xla": {k: x[k] for k in ("bytes", "count", "kinds", "peak")}} for v, p, x in rows], indent=1))
    if a.write:
        doc = REPO / "docs" / "benchmarks.md"
        text = doc.read_text()
        begin, end = "<!-- zero-bench:begin -->", "<!-- zero-bench:end -->"
        i, j = text.index(begin) + len(begin), text.index(end)
        note = f"\n\n`.venv-jax/bin/python benches/zero/bench.py --write`, JAX {jax.__version__}.\n\n"
        doc.write_text(text[:i] + note + t + "\n\n" + text[j:])


if __name__ == "__main__":
    sys.exit(main())
