"""Synthetic token data and initial state for the JAX/Flax example (numpy only).

    python data.py OUTDIR [--examples M]

writes OUTDIR/tokens.npy and OUTDIR/targets.npy (i32[M,T]: a sequence and the same
sequence shifted by one, from a fixed random bigram table, so the loss falls),
OUTDIR/params.safetensors (the Flax parameters under their PIR names: params_Embed_0_embedding,
params_Blocks_Dense_0_kernel, ...), OUTDIR/opt_state.safetensors (the zero
state of optax.MultiSteps(adam)) and OUTDIR/key.safetensors (the carried dropout key).
The layout of the trees is Flax's own (`nn.scan` stacks the block parameters along a
leading dimension of size LAYERS); model.py checks it against `Model.init`.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir import safetensors  # noqa: E402

VOCAB, SEQ, DIM, HEADS, LAYERS, BATCH, MICRO = 32, 8, 16, 2, 3, 8, 2


def init_params(seed=0):
    r = np.random.default_rng(seed)

    def w(*shape, fan_in):
        return (r.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def zeros(*shape):
        return np.zeros(shape, np.float32)

    def ones(*shape):
        return np.ones(shape, np.float32)

    L, D, H, K = LAYERS, DIM, HEADS, DIM // HEADS
    attn = {"query": {"kernel": w(L, D, H, K, fan_in=D)}, "key": {"kernel": w(L, D, H, K, fan_in=D)},
            "value": {"kernel": w(L, D, H, K, fan_in=D)}, "out": {"kernel": w(L, H, K, D, fan_in=D)}}
    block = {"LayerNorm_0": {"scale": ones(L, D), "bias": zeros(L, D)},
             "LayerNorm_1": {"scale": ones(L, D), "bias": zeros(L, D)},
             "MultiHeadDotProductAttention_0": attn,
             "Dense_0": {"kernel": w(L, D, 4 * D, fan_in=D), "bias": zeros(L, 4 * D)},
             "Dense_1": {"kernel": w(L, 4 * D, D, fan_in=4 * D), "bias": zeros(L, D)}}
    return {"Embed_0": {"embedding": w(VOCAB, D, fan_in=1) * 0.5},
            "pos": w(SEQ, D, fan_in=1) * 0.1,
            "Blocks": block,
            "LayerNorm_0": {"scale": ones(D), "bias": zeros(D)},
            "Dense_0": {"kernel": w(D, VOCAB, fan_in=D), "bias": zeros(VOCAB)}}


def _zeros_like(tree):
    if isinstance(tree, dict):
        return {k: _zeros_like(v) for k, v in tree.items()}
    return np.zeros_like(tree)


def init_opt_state(params):
    """optax.MultiSteps(optax.adam(...)).init(params), as plain dicts and lists (the
    field names of its NamedTuples), which name the leaves as jax2pir does."""
    adam = {"count": np.zeros((), np.int32), "mu": _zeros_like(params), "nu": _zeros_like(params)}
    return {"mini_step": np.zeros((), np.int32), "gradient_step": np.zeros((), np.int32),
            "inner_opt_state": [adam], "acc_grads": _zeros_like(params)}


def init_key(seed=0):
    """jax.random.PRNGKey(seed) for a non-negative 32-bit seed: u32 [0, seed]."""
    return np.array([0, seed], np.uint32)


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
    ap.add_argument("--examples", type=int, default=64)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    tokens, targets = dataset(a.examples)
    np.save(out / "tokens.npy", tokens)
    np.save(out / "targets.npy", targets)
    p = init_params()
    safetensors.write(out / "params.safetensors", safetensors.flatten(p, "params"))
    safetensors.write(out / "opt_state.safetensors", safetensors.flatten(init_opt_state(p), "opt_state"))
    safetensors.write(out / "key.safetensors", {"key": init_key()})
    print(f"wrote {out}/tokens.npy {tokens.shape}, targets.npy, params.safetensors, "
          f"opt_state.safetensors, key.safetensors")


if __name__ == "__main__":
    main()
