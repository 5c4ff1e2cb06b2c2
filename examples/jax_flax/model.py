"""A small Flax transformer (token and position embeddings, a stack of pre-norm blocks
built with `nn.scan`, each with causal multi-head attention, a GELU MLP and `nn.Dropout`,
then a layer norm and an LM head) and two training steps, exported to PIR by jax2pir.

    python -m jax2pir examples/jax_flax/model.py:train_step -o flax_multisteps.pir
    python -m jax2pir examples/jax_flax/model.py:train_step_inner -o flax_inner.pir

`train_step` runs optax.MultiSteps(adam): gradients are accumulated over EVERY_K steps
and Adam updates the parameters on every EVERY_K-th (a `lax.cond` in optax, a PIR
`switch`). `train_step_inner` makes MICRO plain SGD steps inside one step, each on its own
micro-batch, with `lax.fori_loop` (a PIR `scan`). The block stack is one PIR `scan` over
the stacked block parameters, its gradient a reverse `scan`. Dropout draws its mask from a
PRNG key carried from step to step (split once per step), so JAX and the executable drop
the same units bit for bit.

Mesh [data=2]: the batch is split; parameters and optimizer state are replicated.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

import data

MESH = {"data": 2}
ADAM_LR = 0.01
SGD_LR = 0.2
EVERY_K = 2
DROPOUT = 0.1


def _flax():
    import flax.linen as nn

    class Block(nn.Module):
        """Pre-norm attention and MLP; the (carry, x) -> (carry, y) form nn.scan wants."""

        @nn.compact
        def __call__(self, x, _):
            h = nn.LayerNorm()(x)
            mask = nn.make_causal_mask(jnp.ones(x.shape[:2], jnp.int32))
            # No projection biases: the key bias has a zero gradient (softmax ignores a shift
            # of a row), so its update would be rounding noise, which Adam scales up to ±lr.
            attention = nn.MultiHeadDotProductAttention(num_heads=data.HEADS, use_bias=False, deterministic=True)
            x = x + attention(h, h, mask=mask)
            h = nn.gelu(nn.Dense(4 * data.DIM)(nn.LayerNorm()(x)))
            h = nn.Dropout(DROPOUT, deterministic=False)(h)
            return x + nn.Dense(data.DIM)(h), None

    class Model(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            pos = self.param("pos", nn.initializers.normal(0.1), (data.SEQ, data.DIM))
            x = nn.Embed(data.VOCAB, data.DIM)(tokens) + pos
            blocks = nn.scan(Block, variable_axes={"params": 0},
                             split_rngs={"params": True, "dropout": True}, length=data.LAYERS)
            x, _ = blocks(name="Blocks")(x, None)
            return nn.Dense(data.VOCAB)(nn.LayerNorm()(x))

    return Model()


MODEL = _flax()


def _optimizer():
    import optax

    return optax.MultiSteps(optax.adam(ADAM_LR), every_k_schedule=EVERY_K)


def loss_fn(params, key, tokens, targets):
    import optax

    logits = MODEL.apply({"params": params}, tokens, rngs={"dropout": key})
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def train_step(params, opt_state, key, tokens, targets):
    import optax

    key, sub = jax.random.split(key)
    loss, grads = jax.value_and_grad(loss_fn)(params, sub, tokens, targets)
    updates, opt_state = _optimizer().update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, key, loss


def train_step_inner(params, key, tokens, targets):
    """MICRO SGD steps in one step; micro-batch i is examples i, i + MICRO, ... of the
    batch (a stride, so that each device's share of the split batch stays its own)."""
    mb = tokens.shape[0] // data.MICRO

    def micro(x, i):
        return lax.dynamic_index_in_dim(x.reshape(mb, data.MICRO, -1), i, axis=1, keepdims=False)

    def body(i, carry):
        params, key, total = carry
        key, sub = jax.random.split(key)
        loss, grads = jax.value_and_grad(loss_fn)(params, sub, micro(tokens, i), micro(targets, i))
        params = jax.tree.map(lambda p, g: p - SGD_LR * g, params, grads)
        return params, key, total + loss

    params, key, total = lax.fori_loop(0, data.MICRO, body, (params, key, jnp.float32(0.0)))
    return params, key, total / data.MICRO


def example_params():
    """data.py's numpy parameters, checked against the tree Flax itself builds."""
    params = jax.tree.map(jnp.asarray, data.init_params())
    tokens = jnp.zeros((data.BATCH, data.SEQ), jnp.int32)
    want = jax.eval_shape(lambda k: MODEL.init({"params": k, "dropout": k}, tokens)["params"],
                          jax.random.PRNGKey(0))
    got = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    if jax.tree.structure(got) != jax.tree.structure(want) or jax.tree.leaves(got) != jax.tree.leaves(want):
        raise ValueError(f"data.init_params() is not Flax's parameter tree:\n{got}\n!=\n{want}")
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


def train_step_inner_example_args():
    return (example_params(), example_key(), *_batch())


def train_step_inner_export_options():
    return {"mesh": MESH, "in_shardings": (None, None, P("data"), P("data")),
            "result_names": ["params", "key", "loss"]}
