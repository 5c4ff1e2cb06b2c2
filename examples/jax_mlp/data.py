"""Synthetic data and initial parameters for the JAX MLP example (numpy only).

    python data.py OUTDIR [--examples M]

writes OUTDIR/x.npy (f32[M,32]), OUTDIR/labels.npy (i32[M]) and OUTDIR/params.safetensors
(the initial parameters under their PIR names: params_w1, params_b1, params_w2, params_b2),
and OUTDIR/opt_state.safetensors (Adam's zero state, for train_step_adam).
The labels come from a fixed random linear teacher, so the task is learnable.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir import safetensors  # noqa: E402

D_IN, HIDDEN, CLASSES, BATCH = 32, 64, 10, 64


def init_params(seed=0):
    r = np.random.default_rng(seed)
    return {
        "w1": (r.standard_normal((D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": (r.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32),
        "b2": np.zeros(CLASSES, np.float32),
    }


def dataset(m, seed=1):
    r = np.random.default_rng(seed)
    x = r.standard_normal((m, D_IN)).astype(np.float32)
    teacher = r.standard_normal((D_IN, CLASSES))
    labels = np.argmax(x @ teacher, axis=1).astype(np.int32)
    return x, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--examples", type=int, default=512)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    x, labels = dataset(a.examples)
    np.save(out / "x.npy", x)
    np.save(out / "labels.npy", labels)
    p = init_params()
    safetensors.write(out / "params.safetensors", safetensors.flatten(p, "params"))
    zeros = {m: {k: np.zeros_like(v) for k, v in p.items()} for m in ("mu", "nu")}
    zeros["count"] = np.zeros((), np.int32)
    safetensors.write(out / "opt_state.safetensors", safetensors.flatten(zeros, "opt_state"))
    print(f"wrote {out}/x.npy {x.shape}, labels.npy {labels.shape}, params.safetensors, opt_state.safetensors")


if __name__ == "__main__":
    main()
