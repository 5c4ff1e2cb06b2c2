"""A two-layer MLP classifier in JAX and its training steps, exported to PIR by jax2pir.

    python -m jax2pir examples/jax_mlp/model.py:train_step -o mlp.pir
    python -m jax2pir examples/jax_mlp/model.py:train_step_adam -o mlp_adam.pir

The batch is split over a 4-device data-parallel mesh; the parameters are replicated
(pjc inserts the gradient all-reduce). `train_step` is plain SGD; `train_step_adam` uses
optax.adam, whose state (count, mu, nu) is carried like the parameters.
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

import data

LR = 0.1
ADAM_LR = 0.01
MESH = {"data": 4}


def loss_fn(params, x, labels):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, x, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
    return params, loss


def _adam():
    import optax

    return optax.adam(ADAM_LR)



def train_step_adam(params, opt_state, x, labels):
    import optax

    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    state = (optax.ScaleByAdamState(opt_state["count"], opt_state["mu"], opt_state["nu"]),
             optax.EmptyState())
    updates, (adam, _) = _adam().update(grads, state, params)
    params = optax.apply_updates(params, updates)
    return params, {"count": adam.count, "mu": adam.mu, "nu": adam.nu}, loss


def example_params():
    return jax.tree.map(jnp.asarray, data.init_params())


def example_opt_state(params):
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"count": jnp.zeros((), jnp.int32), "mu": zeros, "nu": jax.tree.map(jnp.zeros_like, params)}


def _batch():
    x, labels = data.dataset(data.BATCH)
    return jnp.asarray(x), jnp.asarray(labels)


def train_step_example_args():
    return (example_params(), *_batch())


def train_step_export_options():
    return {"mesh": MESH, "in_shardings": (None, P("data"), P("data")),
            "result_names": ["params", "loss"]}


def train_step_adam_example_args():
    p = example_params()
    return (p, example_opt_state(p), *_batch())


def train_step_adam_export_options():
    return {"mesh": MESH, "in_shardings": (None, None, P("data"), P("data")),
            "result_names": ["params", "opt_state", "loss"]}
