"""Per-primitive agreement cases: each small function is exported, run by `pjc eval`,
and compared with JAX (forward values and, for most, gradients)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return jnp.asarray(rng.standard_normal(shape) * scale, jnp.float32)


def i32(hi, *shape):
    return jnp.asarray(rng.integers(0, hi, shape), jnp.int32)


def g(fn):
    """value_and_grad of the sum of fn's result w.r.t. every float argument."""
    def wrapped(*args):
        # sum(sin(.)) rather than sum(.): a plain sum has zero gradient through a norm.
        return jax.value_and_grad(lambda *a: jnp.sum(jnp.sin(fn(*a))), argnums=0)(*args)
    wrapped.__name__ = "grad_" + fn.__name__
    return wrapped


def elementwise(x, y):
    return (jnp.exp(x) + jnp.log1p(jnp.abs(y)) * jnp.tanh(x) - jax.nn.sigmoid(y) / (1 + x * x)
            + jnp.sqrt(jnp.abs(x) + 1) * lax.rsqrt(y * y + 1) + jnp.maximum(x, y) - jnp.minimum(x, 0.5)
            + jnp.sin(x) * jnp.cos(y) + jnp.floor(x) + jnp.ceil(y) + jnp.round(x) + jnp.sign(y)
            + jnp.expm1(x * 0.1) + x ** 3 + x ** -2 + jnp.abs(y) ** 0.7 + jnp.arctan2(x, y)
            + jnp.where(x > y, x, y) + jnp.clip(x, -0.5, 0.5) + lax.erf(x) + jnp.fmod(x, 0.7)
            + jnp.square(y))


def compare_logic(x, y):
    a = (x < y) | (x >= 1.0)
    b = (x == y) ^ (x != 0.25) & ~(y <= -1.0)
    return jnp.where(a & b, 1.0, 0.0) + jnp.isfinite(x / y).astype(jnp.float32)


def gelu_both(x):
    return jax.nn.gelu(x, approximate=True) + jax.nn.gelu(x, approximate=False) + jax.nn.relu(x) + jax.nn.silu(x)


def layer_norm(x, s, b):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.var(x, -1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * s + b


def attention(q, k, v):
    t = q.shape[1]
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(mask, s, -1e9)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v)


def embed(e, ids):
    return e[ids] * 2.0 + jnp.take(e, ids[:, ::-1], axis=0)


def xent(logits, labels):
    lp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(lp, labels[:, None], axis=1)[:, 0] + lp[jnp.arange(labels.shape[0]), labels]


def onehot_xent(logits, labels):
    return -jnp.sum(jax.nn.one_hot(labels, logits.shape[-1]) * jax.nn.log_softmax(logits), -1)


def conv(x, w):
    y = lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    z = lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.concatenate([y.reshape(-1), (z * z).reshape(-1)])


def conv_nchw(x, w):
    return lax.conv(x, w, (1, 1), "VALID")


def depthwise(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=x.shape[-1])


def pools(x):
    mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
    av = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    return jnp.sum(mx * mx) + jnp.sum(av) + jnp.sum(jnp.mean(x, axis=(1, 2)))


def batch_norm(x, s, b):
    m = jnp.mean(x, axis=(0, 1, 2))
    v = jnp.mean(jnp.square(x - m), axis=(0, 1, 2))
    return (x - m) / jnp.sqrt(v + 1e-5) * s + b


def shapes(x):
    y = jnp.concatenate([x, x * 2], axis=1)
    y = jnp.pad(y, ((1, 2), (0, 3)))
    y = y[1:5, ::2]
    z = jnp.transpose(x)[None, :, :].reshape(-1)
    w = jnp.flip(x, 0)
    return jnp.sum(y) + jnp.sum(z[3:9]) + jnp.sum(w[0]) + jnp.cumsum(x, axis=1)[:, -1].sum()


def dynamic(x, i):
    s = lax.dynamic_slice(x, (i, 1), (2, 3))
    u = lax.dynamic_update_slice(x, s * 10, (1, i))
    return jnp.sum(u) + jnp.sum(s)


def reductions(x):
    return (jnp.max(x, 0), jnp.min(x, 1), jnp.prod(x[:2] * 0.5 + 1, 0), jnp.argmax(x, 1),
            jnp.argmin(x, 0), jnp.any(x > 1.0, 1), jnp.all(x > -3.0, 0))


def ints(a, b):
    return (a // (b + 1), a % (b + 1), a * b - 7, jnp.maximum(a, b), a.astype(jnp.float32) * 0.5,
            (a << 1) >> 1, jnp.arange(a.shape[0]) + a)


def matmuls(a, b, c):
    return jnp.einsum("bij,bjk->bik", a, b) + jnp.dot(a, c)


def convert_mixed(x):
    h = x.astype(jnp.bfloat16)
    y = jnp.dot(h, h.T, preferred_element_type=jnp.float32)
    return y + h.astype(jnp.float32).sum()


x4 = f32(4, 6)
CASES = [
    ("elementwise", elementwise, (f32(4, 6), f32(4, 6)), 2e-5),
    ("compare_logic", compare_logic, (f32(4, 6), f32(4, 6)), 1e-6),
    ("gelu_relu_silu", gelu_both, (f32(8, 5),), 1e-5),
    ("grad_gelu_relu_silu", g(gelu_both), (f32(8, 5),), 1e-5),
    ("layer_norm", g(layer_norm), (f32(3, 4, 16), f32(16), f32(16)), 1e-5),
    ("attention", g(attention), (f32(2, 8, 2, 4), f32(2, 8, 2, 4), f32(2, 8, 2, 4)), 1e-5),
    ("embedding", g(embed), (f32(10, 4), i32(10, 3, 6)), 1e-6),
    ("take_along_axis", g(xent), (f32(5, 7), i32(7, 5)), 1e-5),
    ("one_hot", g(onehot_xent), (f32(5, 7), i32(7, 5)), 1e-5),
    ("conv_nhwc", g(conv), (f32(2, 8, 8, 3), f32(3, 3, 3, 4)), 1e-4),
    ("conv_nchw", g(conv_nchw), (f32(2, 3, 6, 6), f32(4, 3, 3, 3)), 1e-5),
    ("depthwise", g(depthwise), (f32(2, 6, 6, 4), f32(3, 3, 1, 4)), 1e-5),
    ("pools", g(pools), (f32(2, 8, 8, 3),), 1e-5),
    ("batch_norm", g(batch_norm), (f32(4, 5, 5, 3), f32(3), f32(3)), 1e-4),
    ("shapes", g(shapes), (f32(4, 6),), 1e-5),
    ("dynamic", g(dynamic), (f32(5, 7), jnp.int32(2)), 1e-6),
    ("reductions", reductions, (f32(4, 6),), 1e-6),
    ("ints", ints, (i32(100, 8), i32(5, 8)), 0.0),
    ("matmuls", g(matmuls), (f32(2, 3, 4), f32(2, 4, 5), f32(4, 5)), 1e-5),
    ("bf16", convert_mixed, (f32(4, 8),), 1e-2),
]
