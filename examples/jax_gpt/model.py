"""A small GPT-style decoder in JAX (token + position embedding, pre-norm blocks with
causal softmax attention and a GELU MLP, a final layer norm and an LM head) and its SGD
training step, exported to PIR by jax2pir with Megatron-style tensor parallelism.

    python -m jax2pir examples/jax_gpt/model.py:train_step -o gpt.pir

Mesh [data=2, model=2]: the batch is split over `data`; in each block the query, key,
value and first MLP weights are split by columns over `model` (column-parallel: every
device computes its own heads / hidden units), and the attention output and second MLP
weights by rows (row-parallel: partial sums that pjc all-reduces over `model`).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

import data

LR = 0.1
MESH = {"data": 2, "model": 2}


def layer_norm(x, g, b, eps=1e-5):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps) * g + b


def attention(x, lp):
    b, t, d = x.shape
    h = data.HEADS
    q = (x @ lp["wq"]).reshape(b, t, h, d // h)
    k = (x @ lp["wk"]).reshape(b, t, h, d // h)
    v = (x @ lp["wv"]).reshape(b, t, h, d // h)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // h).astype(np.float32)
    causal = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(causal, s, -1e9)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, t, d)
    return o @ lp["wo"]


def block(x, lp):
    x = x + attention(layer_norm(x, lp["ln1_g"], lp["ln1_b"]), lp)
    h = jax.nn.gelu(layer_norm(x, lp["ln2_g"], lp["ln2_b"]) @ lp["w1"] + lp["b1"], approximate=True)
    return x + h @ lp["w2"] + lp["b2"]


def loss_fn(params, tokens, targets):
    x = params["wte"][tokens] + params["wpe"][None, :, :]
    for lp in params["layers"]:
        x = block(x, lp)
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["head"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def train_step(params, tokens, targets):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
    params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
    return params, loss


def param_shardings(params):
    """Megatron: column-parallel wq/wk/wv/w1/b1, row-parallel wo/w2; the rest replicated."""
    col, row = P(None, "model"), P("model", None)
    layer = {"ln1_g": None, "ln1_b": None, "wq": col, "wk": col, "wv": col, "wo": row,
             "ln2_g": None, "ln2_b": None, "w1": col, "b1": P("model"), "w2": row, "b2": None}
    return {"wte": None, "wpe": None, "layers": [dict(layer) for _ in params["layers"]],
            "lnf_g": None, "lnf_b": None, "head": None}


def example_params():
    return jax.tree.map(jnp.asarray, data.init_params())


def train_step_example_args():
    tokens, targets = data.dataset(data.BATCH)
    return example_params(), jnp.asarray(tokens), jnp.asarray(targets)


def train_step_export_options():
    p = data.init_params()
    return {"mesh": MESH, "in_shardings": (param_shardings(p), P("data"), P("data")),
            "result_names": ["params", "loss"]}
