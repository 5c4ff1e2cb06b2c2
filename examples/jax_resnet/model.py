"""ResNets in JAX (NHWC, batch norm in training mode, max-pool stem, global average
pool) and their SGD training steps, exported to PIR by jax2pir with data parallelism.

    python -m jax2pir examples/jax_resnet/model.py:train_step -o resnet18_small.pir
    python -m jax2pir examples/jax_resnet/model.py:train_step_resnet50 -o resnet50.pir

`train_step` is a ResNet-18 layout (basic blocks, 2-2-2-2) with small widths (8 to 64
channels) on 32x32 images, so a CPU trains it in seconds; `train_step_resnet50` is
ResNet-50 (bottlenecks, 3-4-6-3, 64 to 2048 channels) on 224x224 images, exported and
compiled to show the collectives (see README.md). Batch norm uses the statistics of the
whole global batch (pjc all-reduces them over `data`), as JAX computes them on one
device; running averages for inference are left out.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

import data

LR = 0.05
MESH = {"data": 4}


def conv(x, w, stride=1):
    k = w.shape[0]
    pad = (k - 1) // 2
    return lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def batch_norm(x, p, eps=1e-5):
    m = jnp.mean(x, axis=(0, 1, 2))
    v = jnp.mean(jnp.square(x - m), axis=(0, 1, 2))
    return (x - m) * lax.rsqrt(v + eps) * p["g"] + p["b"]


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                             ((0, 0), (1, 1), (1, 1), (0, 0)))


def block(x, b, stride):
    if "conv3" in b:  # bottleneck
        h = jax.nn.relu(batch_norm(conv(x, b["conv1"]), b["bn1"]))
        h = jax.nn.relu(batch_norm(conv(h, b["conv2"], stride), b["bn2"]))
        h = batch_norm(conv(h, b["conv3"]), b["bn3"])
    else:
        h = jax.nn.relu(batch_norm(conv(x, b["conv1"], stride), b["bn1"]))
        h = batch_norm(conv(h, b["conv2"]), b["bn2"])
    skip = batch_norm(conv(x, b["proj"], stride), b["bnp"]) if "proj" in b else x
    return jax.nn.relu(h + skip)


def forward(params, images):
    x = conv(images, params["stem"]["conv"], 2 if params["stem"]["conv"].shape[0] == 7 else 1)
    x = max_pool(jax.nn.relu(batch_norm(x, params["stem"]["bn"])))
    for s, stage in enumerate(params["stages"]):
        for i, b in enumerate(stage):
            x = block(x, b, 2 if (i == 0 and s > 0) else 1)
    x = jnp.mean(x, axis=(1, 2))
    return x @ params["fc"]["w"] + params["fc"]["b"]


def loss_fn(params, images, labels):
    logp = jax.nn.log_softmax(forward(params, images))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, images, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
    return params, loss


def train_step_resnet50(params, images, labels):
    return train_step(params, images, labels)


def _example(config):
    size, *_, batch = data.CONFIGS[config]
    params = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), data.init_params(config))
    return (params, jax.ShapeDtypeStruct((batch, size, size, 3), jnp.float32),
            jax.ShapeDtypeStruct((batch,), jnp.int32))


def example_params():
    return jax.tree.map(jnp.asarray, data.init_params())


def train_step_example_args():
    images, labels = data.dataset(data.CONFIGS["resnet18_small"][-1])
    return (example_params(), jnp.asarray(images), jnp.asarray(labels))


def train_step_resnet50_example_args():
    return _example("resnet50")  # shapes only: tracing needs no 100 MB of weights


def train_step_export_options():
    return {"mesh": MESH, "in_shardings": (None, P("data"), P("data")),
            "result_names": ["params", "loss"]}


train_step_resnet50_export_options = train_step_export_options
