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


# ---- random numbers (threefry2x32, JAX's default PRNG) and cumulative ops -------------
from jax import random  # noqa: E402
import jax.extend  # noqa: E402,F401

KEY = random.PRNGKey(42)   # raw u32[2] key data
TKEY = random.key(7)       # a typed key<fry>[] argument (its parameter is u32[2])


def random_bits(k):
    return (random.bits(k, (3, 5)), random.bits(k, (7,), jnp.uint8), random.bits(k, (2, 3), jnp.uint16),
            random.bits(k), random.bits(k, (1, 4, 1)))


def uniform_bits(k):
    u = random.uniform(k, (4, 33))
    return (u, lax.bitcast_convert_type(u, jnp.uint32), random.uniform(k, (6,), jnp.bfloat16),
            random.uniform(k, (3,), jnp.float16))


def uniform_range(k):
    # u * (max - min) + min: XLA on the CPU fuses this into one FMA, PIR rounds twice.
    return random.uniform(k, (50,), minval=-2.0, maxval=3.0)


def split_fold(k, i):
    ks = random.split(k, 4)
    grid = random.split(ks[2], (2, 3))
    return ks, grid, random.fold_in(k, 123456789), random.fold_in(ks[1], i), random.bits(random.fold_in(k, i), (5,))


def typed_keys(k, i):
    ks = random.split(k, 5)
    sub = ks[i]                                   # dynamic_slice of keys
    pick = jnp.where(i > 2, ks[0], ks[4])         # select_n of keys
    both = jnp.stack([sub, pick])                 # concatenate
    grid = random.split(k, (2, 3)).T              # transpose
    per_key = jax.vmap(lambda kk: random.uniform(kk, (3,)))(ks)  # random_bits over 5 keys
    folded = jax.vmap(random.fold_in)(both, jnp.arange(2))  # fold_in of a key array
    return (random.key_data(both), random.key_data(grid), per_key, random.key_data(folded),
            random.split(k))                      # a typed key result: its u32 data


def seeds(s32, s8):
    return (random.PRNGKey(s32), random.key_data(random.key(s8)), random.bits(random.key(s32), (3,)),
            random.PRNGKey(s8.astype(jnp.uint32) * 7))


def threefry_direct(k, c):
    # The primitive itself, as jax.extend.random exposes it (an odd count is padded).
    y0, y1 = jax.extend.random.threefry2x32_p.bind(k[0], k[1], c, c * 3)
    return jax.extend.random.threefry_2x32(k, c[:7]), y0, y1


def normal(k):
    return random.normal(k, (64, 64)), random.normal(k, (3, 5), jnp.bfloat16)


def truncated(k):
    return (random.truncated_normal(k, -2.0, 1.5, (200,)),
            jax.nn.initializers.lecun_normal()(k, (16, 8)), random.categorical(k, jnp.arange(6.0), shape=(9,)))


def nextafter(x, y):
    special = jnp.array([0.0, -0.0, 1.0, -1.0, jnp.inf, -jnp.inf, jnp.nan, 1e-45, -1e-45, 3.4028235e38])
    # Not towards a zero from a subnormal: XLA on the CPU compares with subnormals
    # flushed to zero, so it answers nextafter(1e-45, -0.0) = -0.0 (PIR: +0.0).
    xs = jnp.concatenate([x, special, special[:7], special])
    ys = jnp.concatenate([y, jnp.full(10, 0.5), jnp.full(7, -0.0), jnp.full(10, jnp.inf)])
    return lax.bitcast_convert_type(lax.nextafter(xs, ys), jnp.uint32)


def erf_inv(x, edge):
    # edge holds +-1 (and beyond): erfinv(+-1) = +-inf, |x| > 1 gives NaN.
    y = lax.erf_inv(edge)
    return lax.erf_inv(jnp.tanh(x)), jnp.isposinf(y), jnp.isneginf(y), jnp.isnan(y)


def dropout_mask(k):
    return random.bernoulli(k, 0.8, (16, 16)), random.bernoulli(k, jnp.linspace(0.0, 1.0, 7))


def dropout(x, k):
    keep = random.bernoulli(k, 0.75, x.shape)
    return jnp.where(keep, x / 0.75, 0.0)


def randint(k):
    return random.randint(k, (6, 7), -5, 20), random.randint(k, (9,), 0, 200, jnp.uint8)


def cumulative(x):
    return (jnp.cumprod(x, axis=1), lax.cumprod(x, axis=0, reverse=True), lax.cumlogsumexp(x, axis=1),
            lax.cumlogsumexp(x, axis=0, reverse=True), jnp.cumsum(x, 0), lax.cummax(x, axis=1, reverse=True),
            lax.cummin(x, axis=0), lax.cumlogsumexp(jnp.where(x > 1.0, -jnp.inf, x), axis=1))


def cumulative_ints(a):
    return jnp.cumprod(a, axis=1), lax.cumsum(a, axis=0, reverse=True), lax.cumprod(a.astype(jnp.uint32), axis=0)


def cumprod_lse(x):
    return jnp.cumprod(x * 0.5 + 1.0, axis=1) + lax.cumlogsumexp(x, axis=0, reverse=True)


# ---- control flow (PIR v2: scan, while, switch) -------------------------------------


def rnn(h, xs, w, u):
    # Several carries, xs and ys, closed-over weights (the scan's consts), reverse, unroll.
    def step(c, x):
        h, acc = c
        xa, xb = x
        h = jnp.tanh(h @ w + xa @ u)
        return (h, acc + jnp.sum(h * xb)), (h * 2.0, jnp.sum(h))
    (h, acc), (hs, sums) = lax.scan(step, (h, jnp.float32(0.0)), (xs, xs[::-1] * 0.5), reverse=True, unroll=2)
    return jnp.concatenate([hs.reshape(-1), sums, acc[None], h])


def scan_forms(x, xs):
    # A length-only scan (no xs), one without carries (xs -> ys), and one with no
    # operand at all (PIR needs one: a stand-in carry).
    a, ys = lax.scan(lambda c, _: (c * 1.5 + 1.0, c), x, None, length=4)
    _, zs = lax.scan(lambda c, r: (c, jnp.sin(r) * 2.0), (), xs)
    _, ks = lax.scan(lambda c, _: (c, jnp.arange(3.0)), (), None, length=2)
    return a, ys, zs, ks


def fori_static(x, w):
    return lax.fori_loop(0, 5, lambda i, c: jnp.tanh(c @ w) + i.astype(jnp.float32) * 0.1, x)


def fori_dynamic(x, w, n):
    return lax.fori_loop(0, n, lambda i, c: jnp.tanh(c @ w) + i.astype(jnp.float32) * 0.1, x)


def while_consts(x, w, limit):
    # The condition and the body close over values (cond_nconsts, body_nconsts).
    def cond(c):
        return (jnp.sum(jnp.abs(c[0])) < limit) & (c[1] < 50)
    def body(c):
        return c[0] * w + 0.25, c[1] + 1
    y, n = lax.while_loop(cond, body, (x, jnp.int32(0)))
    return y, n, lax.while_loop(lambda i: i > 100, lambda i: i + 1, n)  # zero iterations


def vmap_loops(x):
    # A vmapped while_loop keeps its batched predicate (run while any holds, finished rows
    # keep their carries); lax.map is a scan; a vmapped cond is a select.
    grow = jax.vmap(lambda r: lax.while_loop(lambda c: jnp.sum(c[0]) < 10.0,
                                             lambda c: (c[0] * 1.5 + 0.5, c[1] + 1), (r, 0)))
    return (grow(jnp.abs(x)), lax.map(lambda r: jnp.sort(r) * 2.0, x),
            jax.vmap(lambda r: lax.cond(r[0] > 0, jnp.sin, jnp.cos, r))(x), jnp.median(x, axis=1))


def cond_branches(x, w, p):
    return lax.cond(p, lambda x: jnp.sin(x * w), lambda x: x * x - w, x)


def switch_branches(x, w, i):
    fs = [lambda x: x * w, lambda x: jnp.cos(x) + w, lambda x: x @ jnp.ones((x.shape[-1], x.shape[-1])) * 0.1]
    return lax.switch(i, fs, x) + lax.switch(i - 7, fs, x) + lax.switch(i + 7, fs, x)  # clamped


def nested(x, w, n):
    # Control flow inside bodies: a scan and a cond inside a while.
    def body(c):
        y, k = c
        y, _ = lax.scan(lambda h, _: (jnp.tanh(h @ w), None), y, None, length=2)
        y = lax.cond(k % 2 == 0, lambda v: v * 0.5, lambda v: v + 1.0, y)
        return y, k + 1
    return lax.while_loop(lambda c: c[1] < n, body, (x, 0))


def scan_keys(k, x):
    # A typed PRNG key carried through a scan (dropout in a loop).
    def step(c, _):
        key, h = c
        key, sub = random.split(key)
        keep = random.bernoulli(sub, 0.7, h.shape)
        return (key, jnp.where(keep, h / 0.7, 0.0) + 0.1), keep
    (key, h), masks = lax.scan(step, (k, x), None, length=3)
    return random.key_data(key), h, masks


# ---- sort, top_k, scatter -----------------------------------------------------------


def sorts(x, y):
    # Ties, -0.0 and NaN: PIR's order is JAX's comparator (zeros equal, NaNs greatest and
    # equal); results compared bit for bit through bitcasts.
    special = jnp.array([0.0, -0.0, jnp.nan, 1.0, -jnp.nan, -jnp.inf, 1.0, 0.0, jnp.inf, -0.0], jnp.float32)
    s = jnp.concatenate([special, x[0]])
    bits = lambda v: lax.bitcast_convert_type(v, jnp.uint32)  # noqa: E731
    return (bits(jnp.sort(s)), jnp.argsort(s), bits(jnp.sort(s, descending=True)),
            jnp.argsort(s, descending=True), jnp.sort(x, axis=0), jnp.argsort(x, axis=1),
            lax.sort((jnp.round(x), y, x), num_keys=2), lax.sort((x, y), is_stable=False),
            jnp.sort(jnp.asarray(x > 0)), jnp.sort((x * 10).astype(jnp.int32), axis=1))


def top_k(x):
    v, i = lax.top_k(x, 3)
    v0, i0 = lax.top_k(x, 2, axis=0)
    return v, i, v0, i0


def sort_grad(x, w):
    v, _ = lax.top_k(x, 3)
    return jnp.sort(x * w, axis=1) * w + jnp.sum(v)


def scatters(x, i, v, a, j):
    # Duplicate indices (2 twice, and out of range 9 and -1: -1 wraps like numpy, 9 is
    # dropped), along axis 0 and 1, a scalar index, a point scatter, integers and pred.
    return (x.at[i].set(v), x.at[i].add(v), x.at[i].mul(v), x.at[i].min(v), x.at[i].max(v),
            x.at[:, j].set(x[::-1] * 3.0), x.at[:, j].max(x[::-1]), x.at[2].set(7.0),
            x.at[i, 1].set(v[:, 0]), x.at[i].set(v, mode="clip"),
            a.at[i].add(a[:5] * 3), a.at[i].min(a[4:]), a.at[j].mul(a[:4]),
            (a > 0).at[j].set(False), (a > 0).at[i].max(a[:5] < 0))


def scatter_grad(x, i, v):
    return x.at[i].set(v * 2.0) * x + x.at[i].add(v * v)


def permutations(k, x):
    return (random.permutation(k, 10), random.permutation(k, x, axis=1),
            random.permutation(k, x, independent=True), random.choice(k, x, (3,), replace=False),
            random.choice(k, 10, (4,), replace=False, p=jnp.arange(1.0, 11.0)),
            random.choice(k, x, (2,), replace=False, axis=1))


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
    # Random bits, uniform floats and keys must be bit-exact (tolerance 0).
    ("random_bits", random_bits, (KEY,), 0.0),
    ("random_uniform", uniform_bits, (KEY,), 0.0),
    ("random_uniform_range", uniform_range, (KEY,), 2.5e-7),
    ("random_split_fold_in", split_fold, (KEY, jnp.int32(-5)), 0.0),
    ("random_typed_keys", typed_keys, (TKEY, jnp.int32(3)), 0.0),
    ("random_seed", seeds, (jnp.int32(-123), jnp.int8(-3)), 0.0),
    ("threefry2x32", threefry_direct, (KEY, jnp.arange(8, dtype=jnp.uint32) * 77), 0.0),
    ("dropout_mask", dropout_mask, (KEY,), 0.0),
    ("grad_dropout", g(dropout), (f32(8, 16), KEY), 1e-6),
    ("randint", randint, (KEY,), 0.0),
    # erf_inv is XLA's f32 polynomial, not bit-exact (FMA, log1p): a few ulp.
    ("random_normal", normal, (KEY,), 1e-6),
    ("truncated_normal", truncated, (KEY,), 1e-6),
    ("nextafter", nextafter, (f32(12), jnp.asarray(np.repeat([0.0, 1.0, -np.inf], 4), jnp.float32)), 0.0),
    ("erf_inv", erf_inv, (f32(4, 6), jnp.array([1.0, -1.0, 1.5, 0.0], jnp.float32)), 1e-6),
    ("grad_erf_inv", g(lambda x: lax.erf_inv(jnp.tanh(x))), (f32(4, 6),), 1e-5),
    ("cumulative", cumulative, (f32(5, 7),), 1e-5),
    ("cumulative_ints", cumulative_ints, (i32(7, 5, 7) - 3,), 0.0),
    ("grad_cumprod_cumlogsumexp", g(cumprod_lse), (f32(5, 7),), 1e-5),
]

# Version 2 (control flow, sort, top_k, scatter): run by `pjc eval` like the others.
CASES_V2 = [
    ("scan", g(rnn), (f32(3), f32(6, 3), f32(3, 3), f32(3, 3)), 1e-5),
    ("scan_forms", scan_forms, (f32(4), f32(3, 2)), 1e-6),
    ("fori_loop_static", g(fori_static), (f32(2, 4), f32(4, 4, scale=0.5)), 1e-5),
    ("fori_loop_dynamic", fori_dynamic, (f32(2, 4), f32(4, 4, scale=0.5), jnp.int32(6)), 1e-5),
    ("while_loop", while_consts, (f32(5), jnp.float32(1.3), jnp.float32(40.0)), 1e-5),
    ("cond_true", g(cond_branches), (f32(3, 4), f32(4), jnp.bool_(True)), 1e-5),
    ("cond_false", g(cond_branches), (f32(3, 4), f32(4), jnp.bool_(False)), 1e-5),
    ("switch", g(switch_branches), (f32(3, 4), f32(4), jnp.int32(1)), 1e-5),
    ("nested_control_flow", nested, (f32(2, 3), f32(3, 3), jnp.int32(3)), 1e-5),
    ("vmap_while_map_cond", vmap_loops, (f32(5, 6),), 1e-6),
    ("scan_typed_keys", scan_keys, (TKEY, f32(4, 5)), 1e-6),
    ("sort", sorts, (f32(4, 6), f32(4, 6)), 0.0),
    ("top_k", top_k, (f32(5, 7),), 0.0),
    ("grad_sort_top_k", g(sort_grad), (f32(4, 6), f32(4, 6)), 1e-6),
    ("scatter", scatters, (f32(6, 4), jnp.array([0, 2, 9, 2, -1], jnp.int32), f32(5, 4),
                           jnp.asarray(rng.integers(-9, 9, 9), jnp.int32), jnp.array([3, 0, 3, 1], jnp.int32)), 1e-6),
    ("grad_scatter", g(scatter_grad), (f32(6, 4), jnp.array([0, 2, 5, 2, 4], jnp.int32), f32(5, 4)), 1e-6),
    ("random_permutation_choice", permutations, (KEY, f32(5, 6)), 0.0),
]
