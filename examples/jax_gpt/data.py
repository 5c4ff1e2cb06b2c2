"""Synthetic token data and initial parameters for the JAX GPT example (numpy only).

    python data.py OUTDIR [--examples M]

writes OUTDIR/tokens.npy and OUTDIR/targets.npy (i32[M,T]: a sequence and the same
sequence shifted by one) and OUTDIR/params.safetensors (PIR names: params_wte,
params_layers_0_wq, ...). The sequences follow a fixed random bigram table, so the
next token is predictable and the loss falls.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir import safetensors  # noqa: E402

VOCAB, SEQ, DIM, HEADS, LAYERS, BATCH = 64, 16, 32, 4, 2, 8


def init_params(seed=0):
    r = np.random.default_rng(seed)

    def w(*shape, scale=0.02):
        return (r.standard_normal(shape) * scale).astype(np.float32)

    layers = []
    for _ in range(LAYERS):
        layers.append({
            "ln1_g": np.ones(DIM, np.float32), "ln1_b": np.zeros(DIM, np.float32),
            "wq": w(DIM, DIM, scale=DIM ** -0.5), "wk": w(DIM, DIM, scale=DIM ** -0.5),
            "wv": w(DIM, DIM, scale=DIM ** -0.5), "wo": w(DIM, DIM, scale=DIM ** -0.5),
            "ln2_g": np.ones(DIM, np.float32), "ln2_b": np.zeros(DIM, np.float32),
            "w1": w(DIM, 4 * DIM, scale=DIM ** -0.5), "b1": np.zeros(4 * DIM, np.float32),
            "w2": w(4 * DIM, DIM, scale=(4 * DIM) ** -0.5), "b2": np.zeros(DIM, np.float32),
        })
    return {"wte": w(VOCAB, DIM, scale=0.5), "wpe": w(SEQ, DIM, scale=0.1), "layers": layers,
            "lnf_g": np.ones(DIM, np.float32), "lnf_b": np.zeros(DIM, np.float32),
            "head": w(DIM, VOCAB, scale=DIM ** -0.5)}



def dataset(m, seed=1):
    r = np.random.default_rng(seed)
    table = r.integers(0, VOCAB, (VOCAB, 2))  # each token has two likely successors
    seq = np.zeros((m, SEQ + 1), np.int64)
    seq[:, 0] = r.integers(0, VOCAB, m)
    for t in range(SEQ):
        seq[:, t + 1] = table[seq[:, t], r.integers(0, 2, m)]
    return seq[:, :-1].astype(np.int32), seq[:, 1:].astype(np.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--examples", type=int, default=256)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    tokens, targets = dataset(a.examples)
    np.save(out / "tokens.npy", tokens)
    np.save(out / "targets.npy", targets)
    safetensors.write(out / "params.safetensors", safetensors.flatten(init_params(), "params"))
    print(f"wrote {out}/tokens.npy {tokens.shape}, targets.npy, params.safetensors")


if __name__ == "__main__":
    main()
