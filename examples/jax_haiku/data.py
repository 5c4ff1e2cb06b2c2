"""Synthetic token data and initial state for the JAX/Haiku example (numpy only).

    python data.py OUTDIR [--examples M]

writes OUTDIR/tokens.npy and OUTDIR/targets.npy (i32[M,T]: a sequence and the same
sequence shifted by one, from a fixed random bigram table, so the loss falls),
OUTDIR/params.safetensors (the Haiku parameters under their PIR names: Haiku's module path
with '/' as '_', params_blocks_attn_query_w, params_embed_embeddings, ...),
OUTDIR/opt_state.safetensors (the zero state of
optax.chain(clip_by_global_norm, adamw)) and OUTDIR/key.safetensors (the dropout key,
passed into each step and the next one returned). The layout of the trees is Haiku's own
(`hk.layer_stack` stacks the block parameters along a leading dimension of size LAYERS);
model.py checks it against `Model.init`.
"""

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from jax2pir import safetensors  # noqa: E402

VOCAB, SEQ, DIM, HEADS, LAYERS, BATCH = 32, 8, 16, 2, 2, 8


def init_params(seed=0):
    r = np.random.default_rng(seed)

    def w(*shape, fan_in):
        return (r.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def zeros(*shape):
        return np.zeros(shape, np.float32)

    def ln(*lead):
        return {"scale": np.ones((*lead, DIM), np.float32), "offset": zeros(*lead, DIM)}

    L, D = LAYERS, DIM
    return {"blocks/attn/query": {"w": w(L, D, D, fan_in=D)},
            "blocks/attn/key": {"w": w(L, D, D, fan_in=D)},
            "blocks/attn/value": {"w": w(L, D, D, fan_in=D)},
            "blocks/attn/linear": {"w": w(L, D, D, fan_in=D)},
            "blocks/ln_attn": ln(L), "blocks/ln_mlp": ln(L),
            "blocks/up": {"w": w(L, D, 4 * D, fan_in=D), "b": zeros(L, 4 * D)},
            "blocks/down": {"w": w(L, 4 * D, D, fan_in=4 * D), "b": zeros(L, D)},
            "embed": {"embeddings": w(VOCAB, D, fan_in=1) * 0.5},
            "position": {"embeddings": w(SEQ, D, fan_in=1) * 0.1},
            "ln_f": ln(),
            "head": {"w": w(D, VOCAB, fan_in=D), "b": zeros(VOCAB)}}


def _zeros_like(tree):
    if isinstance(tree, dict):
        return {k: _zeros_like(v) for k, v in tree.items()}
    return np.zeros_like(tree)


def init_opt_state(params):
    """optax.chain(clip_by_global_norm(...), adamw(...)).init(params) as plain lists and
    dicts (the field names of its NamedTuples), which name the leaves as jax2pir does:
    (EmptyState(), (ScaleByAdamState(count, mu, nu), EmptyState(), EmptyState()))."""
    adam = {"count": np.zeros((), np.int32), "mu": _zeros_like(params), "nu": _zeros_like(params)}
    return [[], [adam, [], []]]


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


def _pir_names(flat):
    """Haiku's module paths ('blocks/attn/query') as jax2pir sanitizes them."""
    return {re.sub(r"[^A-Za-z0-9_]", "_", k): v for k, v in flat.items()}


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
    safetensors.write(out / "params.safetensors", _pir_names(safetensors.flatten(p, "params")))
    safetensors.write(out / "opt_state.safetensors",
                      _pir_names(safetensors.flatten(init_opt_state(p), "opt_state")))
    safetensors.write(out / "key.safetensors", {"key": init_key()})
    print(f"wrote {out}/tokens.npy {tokens.shape}, targets.npy, params.safetensors, "
          f"opt_state.safetensors, key.safetensors")


if __name__ == "__main__":
    main()
