"""A small Haiku transformer (token and position embeddings, a stack of pre-norm blocks
built with `hk.layer_stack`, each with causal `hk.MultiHeadAttention`, a GELU MLP and
`hk.dropout`, then a layer norm and an LM head) and its training step, exported to PIR by
jax2pir:

    python -m jax2pir examples/jax_haiku/model.py:train_step -o haiku_adamw.pir

`train_step` clips the gradient by its global norm and applies optax.adamw (weight decay
on every parameter). `hk.layer_stack` runs the blocks as one `lax.scan` over the stacked
block parameters (a PIR `scan`; its gradient a reverse `scan`) and splits the step's PRNG
key into one key per block (the scan's xs), which `hk.dropout` draws its mask from. The
key is passed into the step and the next one returned (split once per step), so JAX and
the executable drop the same units bit for bit.

Mesh [data=2]: the batch is split; parameters and optimizer state are replicated.
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

import data

MESH = {"data": 2}
LR = 0.01
WEIGHT_DECAY = 0.01
# The gradient's global norm is 1.0-2.1 over the first steps, well above CLIP: every
# step is clipped, far from the edge where rounding could pick the other side.
CLIP = 0.5
DROPOUT = 0.1


def _forward(tokens):
    import haiku as hk

    def block(x):
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True, name="ln_attn")(x)
        causal = jnp.tril(jnp.ones((data.SEQ, data.SEQ), bool))[None, None]
        # No projection biases: the key bias has a zero gradient (softmax ignores a shift of
        # a row), so its update would be rounding noise, which Adam scales up to ±lr.
        attention = hk.MultiHeadAttention(num_heads=data.HEADS, key_size=data.DIM // data.HEADS,
                                          w_init=hk.initializers.VarianceScaling(1.0),
                                          with_bias=False, name="attn")
        x = x + attention(h, h, h, mask=causal)
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True, name="ln_mlp")(x)
        h = jax.nn.gelu(hk.Linear(4 * data.DIM, name="up")(h))
        h = hk.dropout(hk.next_rng_key(), DROPOUT, h)
        return x + hk.Linear(data.DIM, name="down")(h)

    with hk.name_scope("position"):  # {"position": {"embeddings": ...}}, not Haiku's "~"
        pos = hk.get_parameter("embeddings", [data.SEQ, data.DIM], init=hk.initializers.RandomNormal(0.1))
    x = hk.Embed(data.VOCAB, data.DIM, name="embed")(tokens) + pos
    x = hk.layer_stack(data.LAYERS, name="blocks")(block)(x)
    x = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True, name="ln_f")(x)
    return hk.Linear(data.VOCAB, name="head")(x)


def _model():
    import haiku as hk

    return hk.transform(_forward)


MODEL = _model()


def _optimizer():
    import optax

    return optax.chain(optax.clip_by_global_norm(CLIP), optax.adamw(LR, weight_decay=WEIGHT_DECAY))


def loss_fn(params, key, tokens, targets):
    import optax

    logits = MODEL.apply(params, key, tokens)
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def train_step(params, opt_state, key, tokens, targets):
    import optax

    key, sub = jax.random.split(key)
    loss, grads = jax.value_and_grad(loss_fn)(params, sub, tokens, targets)
    updates, opt_state = _optimizer().update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, key, loss


def example_params():
    """data.py's numpy parameters, checked against the tree Haiku itself builds."""
    params = jax.tree.map(jnp.asarray, data.init_params())
    tokens = jnp.zeros((data.BATCH, data.SEQ), jnp.int32)
    want = jax.eval_shape(lambda k: MODEL.init(k, tokens), jax.random.PRNGKey(0))
    got = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    if jax.tree.structure(got) != jax.tree.structure(want) or jax.tree.leaves(got) != jax.tree.leaves(want):
        raise ValueError(f"data.init_params() is not Haiku's parameter tree:\n{got}\n!=\n{want}")
    return params


def example_opt_state(params):
    return _optimizer().init(params)


def example_key():
    return jnp.asarray(data.init_key())


def _batch():
    tokens, targets = data.dataset(data.BATCH)
    return jnp.asarray(tokens), jnp.asarray(targets)


def train_step_example_args():
    p = example_params()
    return (p, example_opt_state(p), example_key(), *_batch())


def train_step_export_options():
    return {"mesh": MESH, "in_shardings": (None, None, None, P("data"), P("data")),
            "result_names": ["params", "opt_state", "key", "loss"]}
