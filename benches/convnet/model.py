"""A small CNN training step, for the step-time benchmark.

    program("train", quick)   32x32x3 images, batch 64, one device

conv 3x3 3->32, ReLU, conv 3x3 32->32, ReLU, 2x2 max-pool, conv 3x3 32->64, ReLU,
conv 3x3 64->64, ReLU, 2x2 max-pool, dense 4096->256, ReLU, dense 256->10 (NHWC, HWIO,
'SAME' padding), softmax cross-entropy, `jax.value_and_grad` and an SGD update; the step
returns (params, loss), params carried. --quick: 16x16 images, batch 8, widths halved.
Plain JAX; benches/harness/jax_steps.py exports and times it.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

LR = 0.01


def conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def forward(params, images):
    h = images
    for i, c in enumerate(params["convs"]):
        h = jax.nn.relu(conv(h, c["w"]) + c["b"])
        if i % 2 == 1:
            h = max_pool(h)
    h = h.reshape(h.shape[0], -1)
    h = jax.nn.relu(h @ params["fc1"]["w"] + params["fc1"]["b"])
    return h @ params["fc2"]["w"] + params["fc2"]["b"]


def loss_fn(params, images, labels):
    logp = jax.nn.log_softmax(forward(params, images))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, images, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def program(name, quick=False):
    if name != "train":
        raise KeyError(name)
    size, batch, widths, hidden = (16, 8, [16, 16, 32, 32], 128) if quick else (32, 64, [32, 32, 64, 64], 256)
    r = np.random.default_rng(0)
    convs, cin = [], 3
    for w in widths:
        convs.append({"w": (r.standard_normal((3, 3, cin, w)) * np.sqrt(2.0 / (9 * cin))).astype(np.float32),
                      "b": np.zeros(w, np.float32)})
        cin = w
    flat = (size // 4) ** 2 * cin
    params = {"convs": convs,
              "fc1": {"w": (r.standard_normal((flat, hidden)) * np.sqrt(2.0 / flat)).astype(np.float32),
                      "b": np.zeros(hidden, np.float32)},
              "fc2": {"w": (r.standard_normal((hidden, 10)) / np.sqrt(hidden)).astype(np.float32),
                      "b": np.zeros(10, np.float32)}}
    images = r.standard_normal((batch, size, size, 3)).astype(np.float32)
    labels = r.integers(0, 10, batch).astype(np.int32)
    return {"fn": train_step, "args": (params, images, labels), "mesh": None, "in_shardings": None,
            "result_names": ["params", "loss"], "carry": 1,
            "label": f"CNN, 4 convs 3x3 ({'/'.join(map(str, widths))}) + 2 dense, {size}x{size}x3, batch {batch}, training step (SGD)"}
