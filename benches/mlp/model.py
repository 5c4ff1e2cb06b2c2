"""An MLP training step at a size people train, for the step-time benchmark.

    program("train", quick)      784-2048-2048-10, batch 256, one device
    program("train_dp2", quick)  the same step data-parallel on mesh [data=2]
                                 (batch split, parameters replicated)

ReLU hidden layers, softmax cross-entropy, `jax.value_and_grad` and an SGD update:
the step returns (params, loss), params carried. --quick: 784-256-256-10, batch 32.
Plain JAX; benches/harness/jax_steps.py exports and times it.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

LR = 0.01


def loss_fn(params, x, labels):
    h = x
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    logp = jax.nn.log_softmax(h)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, x, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def program(name, quick=False):
    widths = [784, 256, 256, 10] if quick else [784, 2048, 2048, 10]
    batch = 32 if quick else 256
    r = np.random.default_rng(0)
    params = [{"w": (r.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
               "b": np.zeros(b, np.float32)} for a, b in zip(widths, widths[1:])]
    x = r.standard_normal((batch, widths[0])).astype(np.float32)
    labels = r.integers(0, widths[-1], batch).astype(np.int32)
    dims = "-".join(map(str, widths))
    if name == "train":
        return {"fn": train_step, "args": (params, x, labels), "mesh": None, "in_shardings": None,
                "result_names": ["params", "loss"], "carry": 1,
                "label": f"MLP {dims}, batch {batch}, training step (SGD)"}
    if name == "train_dp2":
        return {"fn": train_step, "args": (params, x, labels), "mesh": {"data": 2},
                "in_shardings": (None, P("data"), P("data")),
                "result_names": ["params", "loss"], "carry": 1,
                "label": f"MLP {dims}, batch {batch} over [data=2], training step (SGD)"}
    raise KeyError(name)
