"""ResNet-50 at 224x224, batch 8, f32, for the step-time benchmark.

    program("forward", quick)  inference: batch norm folded into each convolution's
                               weights and a per-channel bias (what deployment runs)
    program("train", quick)    training step: batch norm in training mode (batch
                               statistics), softmax cross-entropy, `jax.value_and_grad`
                               and an SGD update; returns (params, loss), params carried

Bottlenecks 3-4-6-3, widths 64-128-256-512 (x4 out), 7x7/2 stem, 3x3/2 max-pool, global
average pool, 1000 classes; NHWC activations, HWIO kernels (25.6 M parameters). The
same layout as examples/jax_resnet/model.py, written out here so that the benchmark does
not move when the example does. --quick: bottlenecks 1-1-1-1, widths 8-16-32-64,
32x32 images, batch 4, 10 classes (the same ops, small). Plain JAX;
benches/harness/jax_steps.py exports and times it.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

LR = 0.01


def conv(x, w, stride=1):
    k = w.shape[0]
    pad = (k - 1) // 2
    return lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                             ((0, 0), (1, 1), (1, 1), (0, 0)))


def batch_norm(x, p, eps=1e-5):
    m = jnp.mean(x, axis=(0, 1, 2))
    v = jnp.mean(jnp.square(x - m), axis=(0, 1, 2))
    return (x - m) * lax.rsqrt(v + eps) * p["g"] + p["b"]


# Training form: conv then batch norm (batch statistics).
def cbn(x, c, stride=1):
    return batch_norm(conv(x, c["w"], stride), c)


# Inference form: batch norm folded into the convolution (w' = w * g / sqrt(var + eps),
# b' = beta - mean * g / sqrt(var + eps)), so each is a convolution and a bias.
def cb(x, c, stride=1):
    return conv(x, c["w"], stride) + c["b"]


def network(params, images, layer):
    x = jax.nn.relu(layer(images, params["stem"], 2))
    x = max_pool(x)
    for s, stage in enumerate(params["stages"]):
        for i, b in enumerate(stage):
            stride = 2 if (i == 0 and s > 0) else 1
            h = jax.nn.relu(layer(x, b["c1"]))
            h = jax.nn.relu(layer(h, b["c2"], stride))
            h = layer(h, b["c3"])
            skip = layer(x, b["proj"], stride) if "proj" in b else x
            x = jax.nn.relu(h + skip)
    x = jnp.mean(x, axis=(1, 2))
    return x @ params["fc"]["w"] + params["fc"]["b"]


def forward(params, images):
    return network(params, images, cb)


def loss_fn(params, images, labels):
    logp = jax.nn.log_softmax(network(params, images, cbn))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, images, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def init(config, folded, seed=0):
    blocks, widths, size, batch, classes = config
    r = np.random.default_rng(seed)

    def unit(k, cin, cout):
        w = (r.standard_normal((k, k, cin, cout)) * np.sqrt(2.0 / (k * k * cin))).astype(np.float32)
        if folded:  # as if folded from batch-norm statistics: a scale per channel and a bias
            scale = (0.5 + r.random(cout)).astype(np.float32)
            return {"w": w * scale, "b": (0.1 * r.standard_normal(cout)).astype(np.float32)}
        return {"w": w, "g": np.ones(cout, np.float32), "b": np.zeros(cout, np.float32)}

    params = {"stem": unit(7, 3, widths[0]), "stages": []}
    cin = widths[0]
    for s, (n, w) in enumerate(zip(blocks, widths)):
        stage = []
        for i in range(n):
            stride = 2 if (i == 0 and s > 0) else 1
            cout = 4 * w
            blk = {"c1": unit(1, cin, w), "c2": unit(3, w, w), "c3": unit(1, w, cout)}
            if stride != 1 or cin != cout:
                blk["proj"] = unit(1, cin, cout)
            stage.append(blk)
            cin = cout
        params["stages"].append(stage)
    params["fc"] = {"w": (r.standard_normal((cin, classes)) / np.sqrt(cin)).astype(np.float32),
                    "b": np.zeros(classes, np.float32)}
    images = r.standard_normal((batch, size, size, 3)).astype(np.float32)
    labels = r.integers(0, classes, batch).astype(np.int32)
    return params, images, labels


FULL = ((3, 4, 6, 3), (64, 128, 256, 512), 224, 8, 1000)
QUICK = ((1, 1, 1, 1), (8, 16, 32, 64), 32, 4, 10)


def program(name, quick=False):
    config = QUICK if quick else FULL
    blocks, widths, size, batch, _ = config
    what = (f"ResNet-50 (bottlenecks {'-'.join(map(str, blocks))}, widths {'-'.join(map(str, widths))}), "
            f"{size}x{size}x3, batch {batch}")
    if name == "forward":
        params, images, _ = init(config, folded=True)
        return {"fn": forward, "args": (params, images), "mesh": None, "in_shardings": None,
                "result_names": ["logits"], "carry": 0,
                "label": f"{what}, forward (inference, batch norm folded)"}
    if name == "train":
        params, images, labels = init(config, folded=False)
        return {"fn": train_step, "args": (params, images, labels), "mesh": None, "in_shardings": None,
                "result_names": ["params", "loss"], "carry": 1,
                "label": f"{what}, training step (batch-norm batch statistics, SGD)"}
    raise KeyError(name)
