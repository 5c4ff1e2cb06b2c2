"""Random numbers: JAX's threefry2x32 PRNG written out in PIR integer arithmetic.

PIR has no random-number op (spec section 11, "Random numbers"): random bits are a pure
function of the key and the element's position, computed with `add`, `xor`, `shl`, `shr`
and `or` on `u32` over `iota` counters, so they shard like any elementwise computation
and agree with JAX bit for bit. The reference is JAX's default configuration
(`jax_threefry_partitionable=True` in JAX 0.10, default impl threefry2x32).

A typed key array `key<fry>[S]` is carried as its key data, `u32[S..., 2]` (what
`random_unwrap` returns), so `random_wrap`/`random_unwrap`/`random_clone` emit nothing.

- `random_seed`: seed s -> [hi32(s), lo32(s)], where a seed of 32 bits or fewer is first
  sign- (or zero-) extended to 32 bits and hi32 is 0.
- `random_bits` (shape S, keys K): element i of S (row-major, a 64-bit counter split
  into (hi, lo)) gets (y0, y1) = threefry2x32(key, (hi, lo)); 32 bits are y0 ^ y1, 8 and
  16 bits the low bits of that, 64 bits (y0 << 32) | y1.
- `random_split` (shape S): the new key at position i is (y0, y1) for counter i.
- `random_fold_in` (message m): the new key is threefry2x32(key, (0, u32(m))).
- `threefry2x32` itself (four u32 operands, broadcast together).
"""

import math

from ._builder import fail
from ._rules import KEY_OK, out_type, rule

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _impl_check(eqn, avals):
    for a in avals:
        impl = getattr(a.dtype, "_impl", None)
        if impl is not None and getattr(impl, "name", "") != "threefry2x32":
            fail(eqn, f"PRNG implementation '{impl.name}' (only threefry2x32, JAX's default, "
                      f"is exported)")


def _partitionable_check(eqn):
    import jax

    if not jax.config.jax_threefry_partitionable:
        fail(eqn, "jax_threefry_partitionable=False (the older, non-partitionable bit layout); "
                  "jax2pir exports JAX's default, jax_threefry_partitionable=True")


def _key_halves(b, key):
    """(k0, k1): the two u32 words of a key array u32[K..., 2], each of shape K."""
    kshape = key.shape[:-1]
    words = []
    for j in range(2):
        start = [0] * len(key.shape)
        limit = list(key.shape)
        start[-1], limit[-1] = j, j + 1
        w = b.op("slice", [key], "u32", kshape + (1,), {"start": start, "limit": limit})
        words.append(b.reshape(w, kshape))
    return words


def _stack_key(b, y0, y1):
    """The key array u32[S..., 2] whose words are y0 and y1 (each of shape S)."""
    shape = y0.shape + (1,)
    return b.op("concat", [b.reshape(y0, shape), b.reshape(y1, shape)], "u32",
                y0.shape + (2,), {"dim": len(y0.shape)})


def threefry2x32(b, k0, k1, x0, x1, kdims=None):
    """Threefry-2x32 with 20 rounds: (y0, y1) at x0's shape.

    k0, k1: the key words, of x0's shape or of a smaller shape whose dimension i is
    dimension kdims[i] of x0's (they are broadcast after the key schedule, which is
    computed once per key)."""
    shape = x0.shape
    u = "u32"

    def kconst(v):
        return b.const(v, u, k0.shape)

    def xconst(v):
        return b.const(v, u, shape)

    def spread(v):
        if v.shape == shape:
            return v
        return b.broadcast(v, shape, list(range(len(v.shape))) if kdims is None else kdims)

    k2 = b.op("xor", [b.op("xor", [k0, k1], u, k0.shape), kconst(_PARITY)], u, k0.shape)
    ks = [k0, k1, k2]
    # After group g (0..4) of four rounds: x0 += ks[(g+1)%3], x1 += ks[(g+2)%3] + g + 1.
    inj0 = [spread(ks[(g + 1) % 3]) for g in range(3)]  # repeats with period 3
    inj1 = [spread(b.op("add", [ks[(g + 2) % 3], kconst(g + 1)], u, k0.shape)) for g in range(5)]
    if b._scalar_of.get(x0.name, (None,))[0] == 0:  # the high counter word is 0
        x0 = spread(k0)
    else:
        x0 = b.op("add", [x0, spread(k0)], u, shape)
    x1 = b.op("add", [x1, spread(k1)], u, shape)
    for g in range(5):
        for r in _ROTATIONS[g % 2]:
            x0 = b.op("add", [x0, x1], u, shape)
            rot = b.op("or", [b.op("shl", [x1, xconst(r)], u, shape),
                              b.op("shr", [x1, xconst(32 - r)], u, shape)], u, shape)
            x1 = b.op("xor", [rot, x0], u, shape)
        x0 = b.op("add", [x0, inj0[g % 3]], u, shape)
        x1 = b.op("add", [x1, inj1[g]], u, shape)
    return x0, x1


def _counters(b, lead, shape):
    """(hi, lo) u32 words of the row-major position within `shape` (the last dimensions
    of lead + shape), as JAX's iota_2x32_shape: one iota per dimension times its stride."""
    full = tuple(lead) + tuple(shape)
    n = math.prod(shape)
    if not shape:
        return b.const(0, "u32", full), b.const(0, "u32", full)
    wide = n > 2 ** 32
    dt = "u64" if wide else "u32"
    acc = None
    stride = 1
    for d in reversed(range(len(shape))):
        if shape[d] > 1:
            t = b.op("iota", [], dt, full, {"dim": len(lead) + d})
            if stride != 1:
                t = b.op("mul", [t, b.const(stride, dt, full)], dt, full)
            acc = t if acc is None else b.op("add", [acc, t], dt, full)
        stride *= shape[d]
    if acc is None:
        acc = b.const(0, dt, full)
    if not wide:
        return b.const(0, "u32", full), acc
    hi = b.convert(b.op("shr", [acc, b.const(32, dt, full)], dt, full), "u32")
    lo = b.convert(b.op("and", [acc, b.const(0xFFFFFFFF, dt, full)], dt, full), "u32")
    return hi, lo


def to_u32(b, v):
    """JAX's uint32 view of an integer value: 32-bit and narrower values sign- or
    zero-extended to 32 bits, 64-bit ones truncated to their low word (never relying on
    a wrapping convert)."""
    d = v.dtype
    if d == "u32":
        return v
    if d in ("u8", "u16", "pred"):
        return b.convert(v, "u32")
    if d in ("i8", "i16"):
        v = b.convert(v, "i32")
        d = "i32"
    if d == "i32":
        return b.op("bitcast_convert", [v], "u32", v.shape)
    if d in ("i64", "u64"):
        if d == "i64":
            v = b.op("bitcast_convert", [v], "u64", v.shape)
        lo = b.op("and", [v, b.const(0xFFFFFFFF, "u64", v.shape)], "u64", v.shape)
        return b.convert(lo, "u32")
    raise ValueError(f"{d} is not an integer type")


@rule("random_seed")
def _random_seed(b, eqn, ins):
    _impl_check(eqn, [eqn.outvars[0].aval])
    s = ins[0]
    if s.dtype in ("i64", "u64"):
        w = s if s.dtype == "u64" else b.op("bitcast_convert", [s], "u64", s.shape)
        hi = b.convert(b.op("shr", [w, b.const(32, "u64", s.shape)], "u64", s.shape), "u32")
    else:  # a logical shift by 32 of a 32-bit value: 0
        hi = b.const(0, "u32", s.shape)
    return _stack_key(b, hi, to_u32(b, s))


@rule("random_wrap", "random_unwrap")
def _random_wrap(b, eqn, ins):
    _impl_check(eqn, [eqn.outvars[0].aval, eqn.invars[0].aval])
    return ins[0]  # the key data is the key


@rule("random_bits")
def _random_bits(b, eqn, ins):
    _impl_check(eqn, [eqn.invars[0].aval])
    _partitionable_check(eqn)
    dtype, oshape = out_type(eqn)
    key = ins[0]
    width = int(eqn.params["bit_width"])
    shape = tuple(int(d) for d in eqn.params["shape"])
    lead = key.shape[:-1]
    k0, k1 = _key_halves(b, key)
    hi, lo = _counters(b, lead, shape)
    y0, y1 = threefry2x32(b, k0, k1, hi, lo, kdims=list(range(len(lead))))
    if width == 64:
        w0, w1 = b.convert(y0, "u64"), b.convert(y1, "u64")
        w0 = b.op("shl", [w0, b.const(32, "u64", oshape)], "u64", oshape)
        return b.op("or", [w0, w1], "u64", oshape)
    bits = b.op("xor", [y0, y1], "u32", oshape)
    if width == 32:
        return bits
    if width in (8, 16):
        low = b.op("and", [bits, b.const((1 << width) - 1, "u32", oshape)], "u32", oshape)
        return b.convert(low, dtype)
    fail(eqn, f"bit_width {width} (JAX uses 8, 16, 32 or 64)")


@rule("random_split")
def _random_split(b, eqn, ins):
    _impl_check(eqn, [eqn.invars[0].aval])
    _partitionable_check(eqn)
    key = ins[0]
    shape = tuple(int(d) for d in eqn.params["shape"])
    lead = key.shape[:-1]
    k0, k1 = _key_halves(b, key)
    hi, lo = _counters(b, lead, shape)
    y0, y1 = threefry2x32(b, k0, k1, hi, lo, kdims=list(range(len(lead))))
    return _stack_key(b, y0, y1)


@rule("random_fold_in")
def _random_fold_in(b, eqn, ins):
    _impl_check(eqn, [eqn.invars[0].aval])
    _, oshape = out_type(eqn)
    shape = oshape[:-1]
    key, msg = ins
    k0, k1 = (b.bcast_to(w, shape) for w in _key_halves(b, key))
    m = b.bcast_to(to_u32(b, msg), shape)
    # threefry_fold_in hashes the seed of the message, (0, m), with the key.
    y0, y1 = threefry2x32(b, k0, k1, b.const(0, "u32", shape), m)
    return _stack_key(b, y0, y1)


@rule("threefry2x32")
def _threefry2x32(b, eqn, ins):
    _, shape = out_type(eqn)
    k0, k1, x0, x1 = (b.bcast_to(v, shape) for v in ins)
    return list(threefry2x32(b, k0, k1, x0, x1))


KEY_OK.update({"random_seed", "random_wrap", "random_unwrap", "random_bits", "random_split",
               "random_fold_in"})
