"""Training agreement: an example's exported step, compiled by pjc and run under mpirun in
loop mode, against the same steps run by JAX on the same data.

Step s uses examples (s*B + i) mod M (the executable's loop-mode rule), so JAX is fed
exactly the batches the executable reads.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np

import jax2pir
from common import MPI_ENV, ROOT, compile_pir, rel_err


def load_example(name):
    d = ROOT / "examples" / name
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
    import importlib

    for mod in ("data", "model"):  # each example has its own data.py / model.py
        sys.modules.pop(mod, None)
    data = importlib.import_module("data")
    model = importlib.import_module("model")
    sys.path.remove(str(d))
    return d, data, model


def jax_train(step, state, data_arrays, batch, steps):
    """state: tuple of carried pytrees; returns (final state, [loss per step])."""
    f = jax.jit(step)
    m = len(next(iter(data_arrays)))
    losses = []
    for s in range(steps):
        idx = (s * batch + np.arange(batch)) % m
        out = f(*state, *[a[idx] for a in data_arrays])
        *state, loss = out
        losses.append(float(loss))
    return tuple(state), losses


def pjc_train(work, pir_path, inputs, data_files, nproc, steps):
    """Compile, run `steps` steps under mpirun, return (losses, final outputs, seconds)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    exe = work / "model.bin"
    t = time.time()
    compile_pir(pir_path, exe)
    compile_s = time.time() - t
    jax2pir.safetensors.write(work / "inputs.safetensors", inputs)
    cmd = ["mpirun", "--oversubscribe", "-np", str(nproc), str(exe),
           "--inputs", str(work / "inputs.safetensors"), "--steps", str(steps),
           "--log-every", "1", "--device", "cpu", "--output", str(work / "out.safetensors")]
    for name, path in data_files.items():
        cmd += ["--data", f"{name}={path}"]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV},
                       timeout=600)
    run_s = time.time() - t
    if p.returncode != 0:
        raise AssertionError(f"mpirun failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    losses = [float(v) for v in re.findall(r"^step \d+/\d+: loss=([-0-9.eE+naif]+)", p.stdout, re.M)]
    if len(losses) != steps:
        raise AssertionError(f"expected {steps} logged losses, got {len(losses)}:\n{p.stdout[-2000:]}")
    return losses, jax2pir.safetensors.read(work / "out.safetensors"), compile_s, run_s


def eval_train(work, pir_path, inputs, data_arrays, batch, steps):
    """The loop mode of the executable, with `pjc eval` running each step: step s reads
    examples (s*B + i) mod M of every dataset, results named like a parameter feed back
    as it, and `loss` is recorded. Returns (losses, final outputs, seconds)."""
    from common import pjc_eval

    pir = Path(pir_path).read_text()
    state = dict(inputs)
    m = len(next(iter(data_arrays.values())))
    losses = []
    t = time.time()
    for s in range(steps):
        idx = (s * batch + np.arange(batch)) % m
        out = pjc_eval(pir, {**state, **{n: a[idx] for n, a in data_arrays.items()}},
                       workdir=Path(work) / f"step{s}")
        losses.append(float(out["loss"]))
        state.update({n: v for n, v in out.items() if n in state})
    return losses, state, time.time() - t


def compare_params(got, want_tree, prefix_tree_names, atol=None, rtol=None):
    """Max errors over the carried tensors: (max relative [spec form], max absolute)."""
    names = jax2pir.leaf_names("", prefix_tree_names)
    leaves = jax.tree_util.tree_leaves(prefix_tree_names)  # same order as the names
    worst_rel, worst_abs, bad = 0.0, 0.0, []
    for n, w in zip(names, leaves):
        g = got[n]
        w = np.asarray(w)
        r = rel_err(g, w)
        a = float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)))) if w.size else 0.0
        worst_rel, worst_abs = max(worst_rel, r), max(worst_abs, a)
        if (rtol is not None and r > rtol) or (atol is not None and a > atol):
            bad.append(f"{n}: rel {r:.3g}, abs {a:.3g}")
    return worst_rel, worst_abs, bad
