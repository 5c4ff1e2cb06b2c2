"""The primitive table: one rule per JAX primitive, each emitting PIR statements.

A rule is `rule(builder, eqn, ins) -> Val | [Val]`, where `ins` are the PIR values of
the equation's operands (literals already turned into scalar constants). Rules that
need a rewrite (PIR has no such op) say so in a comment; docs/jax.md lists them all.
Gather and scatter-add live in `_gather.py`, the shard_map collectives in `_spmd.py`,
the random-number primitives (threefry2x32 in integer ops) in `_random.py`.
"""

from ._builder import UnsupportedError, Val, fail, is_empty
from ._text import FLOATS, key_shape, pir_type

RULES = {}

# Primitives whose rules accept typed PRNG key arrays (key<fry>[S], carried as the
# u32[S..., 2] key data): the structural ones below append the key dimension to their
# parameters; the random_* rules (in _random.py) add themselves.
KEY_OK = set()


def rule(*names):
    def deco(f):
        for n in names:
            RULES[n] = f
        return f

    return deco


def out_type(eqn, i=0):
    return pir_type(eqn.outvars[i].aval)


def key_dims(eqn, i=0):
    """The trailing key-data shape of result i when it is a typed key array, else ()."""
    return key_shape(eqn.outvars[i].aval.dtype) or ()


def key_ok(*names):
    KEY_OK.update(names)


# ---- elementwise ---------------------------------------------------------------------

_UNARY = {
    "neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "log1p": "log1p",
    "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
    "logistic": "logistic", "erf": "erf", "sin": "sin", "cos": "cos", "floor": "floor",
    "ceil": "ceil", "sign": "sign", "not": "not", "is_finite": "is_finite",
}
_BINARY = {
    "add": "add", "add_any": "add", "sub": "sub", "mul": "mul", "div": "div", "rem": "rem",
    "max": "max", "min": "min", "atan2": "atan2", "and": "and", "or": "or", "xor": "xor",
    "shift_left": "shl",
}
_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _unary(b, eqn, ins):
    dtype, shape = out_type(eqn)
    return b.op(_UNARY[eqn.primitive.name], [ins[0]], dtype, shape)


def _binary(b, eqn, ins):
    dtype, shape = out_type(eqn)
    x, y = (b.bcast_to(v, shape) for v in ins)
    return b.op(_BINARY[eqn.primitive.name], [x, y], dtype, shape)


def _compare(b, eqn, ins):
    dtype, shape = out_type(eqn)
    x, y = (b.bcast_to(v, shape) for v in ins)
    return b.op("compare", [x, y], dtype, shape, {"dir": _COMPARE[eqn.primitive.name]})


for _n in _UNARY:
    RULES[_n] = _unary
for _n in _BINARY:
    RULES[_n] = _binary
for _n in _COMPARE:
    RULES[_n] = _compare


@rule("shift_right_arithmetic", "shift_right_logical")
def _shr(b, eqn, ins):
    dtype, shape = out_type(eqn)
    signed = dtype.startswith("i")
    if signed != (eqn.primitive.name == "shift_right_arithmetic"):
        fail(eqn, f"PIR's shr is arithmetic for signed and logical for unsigned types; "
                  f"{eqn.primitive.name} on {dtype} has no direct translation")
    x, y = (b.bcast_to(v, shape) for v in ins)
    return b.op("shr", [x, y], dtype, shape)


@rule("pow")
def _pow(b, eqn, ins):
    dtype, shape = out_type(eqn)
    # lax.pow accepts an integer exponent with a float base; PIR's operands match.
    x, y = (b.bcast_to(b.convert(v, dtype), shape) for v in ins)
    return b.op("pow", [x, y], dtype, shape)


@rule("square")
def _square(b, eqn, ins):
    dtype, shape = out_type(eqn)
    return b.op("mul", [ins[0], ins[0]], dtype, shape)


@rule("integer_pow")
def _integer_pow(b, eqn, ins):
    # Rewritten as JAX evaluates it (square-and-multiply, same order of products), so
    # the result is bitwise JAX's; a negative power divides 1 by it.
    dtype, shape = out_type(eqn)
    y = int(eqn.params["y"])
    x = ins[0]
    if y == 0:
        return b.const(1, dtype, shape)
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else b.op("mul", [acc, x], dtype, shape)
        n >>= 1
        if n:
            x = b.op("mul", [x, x], dtype, shape)
    if y < 0:
        acc = b.op("div", [b.const(1, dtype, shape), acc], dtype, shape)
    return acc


@rule("exp2")
def _exp2(b, eqn, ins):
    # exp2(x) = exp(x * ln 2): may differ from XLA's exp2 in the last bit.
    dtype, shape = out_type(eqn)
    ln2 = b.const(0.6931471805599453, dtype, shape)
    return b.op("exp", [b.op("mul", [ins[0], ln2], dtype, shape)], dtype, shape)


@rule("tan")
def _tan(b, eqn, ins):
    dtype, shape = out_type(eqn)
    s = b.op("sin", ins, dtype, shape)
    c = b.op("cos", ins, dtype, shape)
    return b.op("div", [s, c], dtype, shape)


@rule("erfc")
def _erfc(b, eqn, ins):
    # 1 - erf(x): loses relative accuracy for large x (where erfc is tiny).
    dtype, shape = out_type(eqn)
    return b.op("sub", [b.const(1, dtype, shape), b.op("erf", ins, dtype, shape)], dtype, shape)


# Giles, "Approximating the erfinv function" (single precision), the polynomial XLA's
# ErfInv evaluates for f32: w = -log1p(-x*x); p(w - 2.5) for w < 5, q(sqrt(w) - 3) else.
_ERFINV_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


@rule("erf_inv")
def _erf_inv(b, eqn, ins):
    # Rewrite: XLA's f32 approximation, step for step (Horner with a per-element choice
    # of coefficients); erfinv(+-1) = +-inf. bf16/f16 are computed in f32, as XLA does.
    # Agrees with JAX to a few ulp (XLA may fuse the Horner steps into FMAs, and log1p
    # is not correctly rounded on either side).
    dtype, shape = out_type(eqn)
    if dtype == "f64":
        fail(eqn, "erf_inv on f64 (only XLA's f32 approximation is exported; bf16/f16 use it)")
    f = "f32"
    x = b.convert(ins[0], f)

    def c(v):
        return b.const(v, f, shape)

    def op(name, *args):
        return b.op(name, list(args), f, shape)

    w = op("neg", op("log1p", op("neg", op("mul", x, x))))
    lt = b.op("compare", [w, c(5.0)], "pred", shape, {"dir": "lt"})
    t = b.op("select", [lt, op("sub", w, c(2.5)), op("sub", op("sqrt", w), c(3.0))], f, shape)

    def coef(i):
        return b.op("select", [lt, c(_ERFINV_LT5[i]), c(_ERFINV_GE5[i])], f, shape)

    p = coef(0)
    for i in range(1, len(_ERFINV_LT5)):
        p = op("add", coef(i), op("mul", p, t))
    r = op("mul", p, x)
    one = b.op("compare", [op("abs", x), c(1.0)], "pred", shape, {"dir": "eq"})
    r = b.op("select", [one, op("mul", x, c(float("inf"))), r], f, shape)
    return b.convert(r, dtype)


@rule("nextafter")
def _nextafter(b, eqn, ins):
    # Rewrite on the bit pattern (as XLA does): step the magnitude by one ulp away from or
    # toward zero; from +-0 the smallest subnormal with y's sign; x == y gives y; NaN in,
    # NaN out.
    dtype, shape = out_type(eqn)
    x, y = (b.bcast_to(v, shape) for v in ins)
    u = {"f64": "u64", "f32": "u32", "f16": "u16", "bf16": "u16"}[dtype]
    sign = 1 << ({"u64": 64, "u32": 32, "u16": 16}[u] - 1)

    def cmp(a, c, d):
        return b.op("compare", [a, c], "pred", shape, {"dir": d})

    def bits(v):
        return b.op("bitcast_convert", [v], u, shape)

    zero = b.const(0, dtype, shape)
    away = b.op("xor", [cmp(x, zero, "lt"), cmp(x, y, "lt")], "pred", shape)
    step = b.op("select", [away, b.const(1, u, shape), b.const((sign << 1) - 1, u, shape)], u, shape)
    moved = b.op("add", [bits(x), step], u, shape)
    tiny = b.op("or", [b.op("and", [bits(y), b.const(sign, u, shape)], u, shape),
                       b.const(1, u, shape)], u, shape)
    r = b.op("select", [cmp(x, zero, "eq"), tiny, moved], u, shape)
    r = b.op("bitcast_convert", [r], dtype, shape)
    r = b.op("select", [cmp(x, y, "eq"), y, r], dtype, shape)
    isnan = b.op("or", [cmp(x, x, "ne"), cmp(y, y, "ne")], "pred", shape)
    return b.op("select", [isnan, b.const(float("nan"), dtype, shape), r], dtype, shape)


@rule("round")
def _round(b, eqn, ins):
    dtype, shape = out_type(eqn)
    method = int(eqn.params.get("rounding_method", 0))
    return b.op("round" if method == 0 else "round_even", ins, dtype, shape)


@rule("clamp")
def _clamp(b, eqn, ins):
    dtype, shape = out_type(eqn)
    lo, x, hi = ins
    return b.op("clamp", [lo, x, hi], dtype, shape)


@rule("select_n")
def _select_n(b, eqn, ins):
    dtype, shape = out_type(eqn)
    which, cases = ins[0], [b.bcast_to(c, shape) for c in ins[1:]]
    if key_dims(eqn) and which.shape:  # a per-key choice covers the key's data too
        which = b.broadcast(which, shape, list(range(len(which.shape))))
    if which.dtype == "pred":
        if len(cases) == 1:
            return cases[0]
        return b.op("select", [which, cases[1], cases[0]], dtype, shape)
    # An integer selector: a chain of selects, case k where which == k.
    acc = cases[0]
    for k in range(1, len(cases)):
        kk = b.const(k, which.dtype, which.shape)
        p = b.op("compare", [which, kk], "pred", which.shape, {"dir": "eq"})
        acc = b.op("select", [p, cases[k], acc], dtype, shape)
    return acc


@rule("convert_element_type")
def _convert(b, eqn, ins):
    dtype, _ = out_type(eqn)
    return b.convert(ins[0], dtype)


@rule("bitcast_convert_type")
def _bitcast(b, eqn, ins):
    dtype, shape = out_type(eqn)
    if shape != ins[0].shape:
        fail(eqn, "a bitcast between types of different widths changes the shape; PIR's "
                  "bitcast_convert keeps it")
    return b.op("bitcast_convert", ins, dtype, shape)


@rule("reduce_precision")
def _reduce_precision(b, eqn, ins):
    x = ins[0]
    bits = (int(eqn.params["exponent_bits"]), int(eqn.params["mantissa_bits"]))
    own = {"f64": (11, 52), "f32": (8, 23), "f16": (5, 10), "bf16": (8, 7)}.get(x.dtype)
    if bits == own:
        return x
    narrow = {(8, 7): "bf16", (5, 10): "f16", (8, 23): "f32"}.get(bits)
    if narrow is None:
        fail(eqn, f"reduce_precision to {bits} has no PIR dtype")
    return b.convert(b.convert(x, narrow), x.dtype)


@rule("stop_gradient", "copy", "copy_p", "pvary", "reshard", "device_put", "name",
      "random_clone")
def _identity(b, eqn, ins):
    # stop_gradient only matters to differentiation, which JAX has already done; the
    # others are layout or placement hints with no meaning in PIR (random_clone only
    # marks a key as reusable). optimization_barrier is in _remat.py.
    return list(ins)


key_ok("stop_gradient", "copy", "copy_p", "pvary", "reshard", "device_put", "name",
       "random_clone")


@rule("empty", "empty2")
def _empty(b, eqn, ins):
    # An uninitialised buffer (JAX's placeholder for the residuals of a cond branch not
    # taken): PIR has none, zeros stand in.
    dtype, shape = out_type(eqn)
    return b.const(0, dtype, shape)


@rule("sharding_constraint")
def _sharding_constraint(b, eqn, ins):
    x = ins[0]
    if b.spmd:
        return x
    spec = b.module.spec_entries(eqn.params["sharding"], len(x.shape))
    if spec is None:
        return x
    # A same-shape reshape carrying `on [...]`: PIR's sharding constraint on a value.
    return b.op("reshape", [x], x.dtype, x.shape, sharding=spec)


# ---- shapes ------------------------------------------------------------------------


@rule("broadcast_in_dim")
def _broadcast_in_dim(b, eqn, ins):
    dtype, shape = out_type(eqn)
    x = ins[0]
    dims = [int(d) for d in eqn.params["broadcast_dimensions"]]
    rank = len(eqn.outvars[0].aval.shape)
    dims += list(range(rank, len(shape)))  # a key array's data dimension stays last
    return b.broadcast(x, shape, dims)


@rule("reshape")
def _reshape(b, eqn, ins):
    _, shape = out_type(eqn)
    x = ins[0]
    dims = eqn.params.get("dimensions")
    if dims is not None:  # XLA's reshape with a dimension order: transpose, then reshape
        n = len(eqn.invars[0].aval.shape)
        x = b.transpose(x, list(dims) + list(range(n, len(x.shape))))
    return b.reshape(x, shape)


@rule("squeeze", "expand_dims")
def _squeeze(b, eqn, ins):
    _, shape = out_type(eqn)
    return b.reshape(ins[0], shape)


@rule("transpose")
def _transpose(b, eqn, ins):
    perm = [int(p) for p in eqn.params["permutation"]]
    return b.transpose(ins[0], perm + list(range(len(perm), len(ins[0].shape))))


@rule("rev")
def _rev(b, eqn, ins):
    dtype, shape = out_type(eqn)
    dims = [int(d) for d in eqn.params["dimensions"]]
    if not dims:
        return ins[0]
    return b.op("reverse", ins, dtype, shape, {"dims": dims})


@rule("concatenate")
def _concatenate(b, eqn, ins):
    dtype, shape = out_type(eqn)
    ins = [v for v in ins if not is_empty(v)]  # zero-sized pieces add nothing
    if len(ins) == 1:
        return ins[0]
    return b.op("concat", ins, dtype, shape, {"dim": int(eqn.params["dimension"])})


@rule("stack")
def _stack(b, eqn, ins):
    # Rewrite: each operand reshaped with a size-1 dimension at `axis`, then concat.
    dtype, shape = out_type(eqn)
    axis = int(eqn.params["axis"])
    part = shape[:axis] + (1,) + shape[axis + 1:]
    parts = [b.reshape(v, part) for v in ins]
    if len(parts) == 1:
        return parts[0]
    return b.op("concat", parts, dtype, shape, {"dim": axis})


@rule("unstack")
def _unstack(b, eqn, ins):
    # Rewrite: one slice per index along `axis`, reshaped without it.
    x = ins[0]
    axis = int(eqn.params["axis"])
    outs = []
    for i in range(x.shape[axis]):
        lo = [0] * len(x.shape)
        hi = list(x.shape)
        lo[axis], hi[axis] = i, i + 1
        part = list(x.shape)
        part[axis] = 1
        s = b.op("slice", [x], x.dtype, part, {"start": lo, "limit": hi})
        outs.append(b.reshape(s, x.shape[:axis] + x.shape[axis + 1:]))
    return outs


@rule("split")
def _split(b, eqn, ins):
    x = ins[0]
    axis = int(eqn.params["axis"])
    outs, start = [], 0
    for size in eqn.params["sizes"]:
        lo = [0] * len(x.shape)
        hi = list(x.shape)
        lo[axis], hi[axis] = start, start + int(size)
        shape = list(x.shape)
        shape[axis] = int(size)
        outs.append(b.op("slice", [x], x.dtype, shape, {"start": lo, "limit": hi}))
        start += int(size)
    return outs


@rule("pad")
def _pad(b, eqn, ins):
    dtype, shape = out_type(eqn)
    cfg = [tuple(int(c) for c in p) for p in eqn.params["padding_config"]]
    if is_empty(ins[0]):  # padding a zero-sized array: all padding value
        return b.broadcast(ins[1], shape, [])
    attrs = {"low": [c[0] for c in cfg], "high": [c[1] for c in cfg]}
    if any(c[2] for c in cfg):
        attrs["interior"] = [c[2] for c in cfg]
    return b.op("pad", ins, dtype, shape, attrs)


@rule("slice")
def _slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    kd = list(key_dims(eqn))
    attrs = {"start": [int(s) for s in eqn.params["start_indices"]] + [0] * len(kd),
             "limit": [int(s) for s in eqn.params["limit_indices"]] + kd}
    strides = eqn.params.get("strides")
    if strides is not None and any(int(s) != 1 for s in strides):
        attrs["stride"] = [int(s) for s in strides] + [1] * len(kd)
    return b.op("slice", ins, dtype, shape, attrs)


@rule("dynamic_slice")
def _dynamic_slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    kd = list(key_dims(eqn))
    idx = list(ins[1:]) + [b.const(0, ins[1].dtype if len(ins) > 1 else "i32")] * len(kd)
    return b.op("dynamic_slice", [ins[0]] + idx, dtype, shape,
                {"sizes": [int(s) for s in eqn.params["slice_sizes"]] + kd})


@rule("dynamic_update_slice")
def _dynamic_update_slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    kd = key_dims(eqn)
    idx = list(ins[2:]) + [b.const(0, ins[2].dtype if len(ins) > 2 else "i32")] * len(kd)
    return b.op("dynamic_update_slice", ins[:2] + idx, dtype, shape)


@rule("iota")
def _iota(b, eqn, ins):
    dtype, shape = out_type(eqn)
    return b.op("iota", [], dtype, shape, {"dim": int(eqn.params["dimension"])})


# ---- reductions and contractions -------------------------------------------------------

_REDUCE = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
           "reduce_prod": "prod", "reduce_and": "and", "reduce_or": "or"}


def _reduce(b, eqn, ins):
    dtype, shape = out_type(eqn)
    axes = [int(a) for a in eqn.params["axes"]]
    if not axes:
        return ins[0]
    return b.op("reduce", ins, dtype, shape, {"dims": axes, "kind": _REDUCE[eqn.primitive.name]})


for _n in _REDUCE:
    RULES[_n] = _reduce


@rule("argmax", "argmin")
def _argmax(b, eqn, ins):
    dtype, shape = out_type(eqn)
    axes = [int(a) for a in eqn.params["axes"]]
    if len(axes) != 1:
        fail(eqn, "argmax/argmin over several axes")
    if dtype not in ("i32", "i64"):
        r = b.op(eqn.primitive.name, ins, "i32", shape, {"dim": axes[0]})
        return b.convert(r, dtype)
    return b.op(eqn.primitive.name, ins, dtype, shape, {"dim": axes[0]})


@rule("dot_general")
def _dot_general(b, eqn, ins):
    dtype, shape = out_type(eqn)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    x, y = ins
    if x.dtype != y.dtype or (x.dtype not in FLOATS and dtype in FLOATS):
        # PIR wants one operand dtype; JAX may mix them under preferred_element_type.
        x, y = b.convert(x, dtype), b.convert(y, dtype)
    attrs = {}
    for k, v in (("lhs_batch", lb), ("rhs_batch", rb), ("lhs_contract", lc), ("rhs_contract", rc)):
        if len(v):
            attrs[k] = [int(d) for d in v]
    acc_dtype = dtype
    if dtype in FLOATS and x.dtype in FLOATS and _width(dtype) < _width(x.dtype):
        acc_dtype = x.dtype  # a narrowing preferred type: compute wide, then round
    r = b.op("dot_general", [x, y], acc_dtype, shape, attrs)
    return b.convert(r, dtype)


def _width(d):
    return {"f64": 64, "f32": 32, "f16": 16, "bf16": 16}[d]


@rule("conv_general_dilated")
def _conv(b, eqn, ins):
    dtype, shape = out_type(eqn)
    p = eqn.params
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    nsp = len(lhs_spec) - 2

    def labels(spec, first, second):
        lab = [""] * len(spec)
        lab[spec[0]] = first
        lab[spec[1]] = second
        for i, d in enumerate(spec[2:]):
            lab[d] = str(i)
        return "".join(lab)

    dims = f"{labels(lhs_spec, 'b', 'f')}_{labels(rhs_spec, 'o', 'i')}->{labels(out_spec, 'b', 'f')}"
    from ._text import Quoted

    attrs = {"dims": Quoted(dims)}
    strides = [int(s) for s in p["window_strides"]]
    if any(s != 1 for s in strides):
        attrs["window_strides"] = strides
    padding = [[int(lo), int(hi)] for lo, hi in p["padding"]]
    if any(lo or hi for lo, hi in padding):
        attrs["padding"] = padding
    for k in ("lhs_dilation", "rhs_dilation"):
        v = [int(s) for s in (p.get(k) or [1] * nsp)]
        if any(s != 1 for s in v):
            attrs[k] = v
    if int(p["feature_group_count"]) != 1:
        attrs["feature_group_count"] = int(p["feature_group_count"])
    if int(p["batch_group_count"]) != 1:
        attrs["batch_group_count"] = int(p["batch_group_count"])
    x, k = ins
    if x.dtype != k.dtype:
        x, k = b.convert(x, dtype), b.convert(k, dtype)
    r = b.op("convolution", [x, k], dtype if dtype in FLOATS else x.dtype, shape, attrs)
    return b.convert(r, dtype)


# ---- windows -----------------------------------------------------------------------

_WINDOW = {"reduce_window_sum": "sum", "reduce_window_max": "max", "reduce_window_min": "min"}


def _reduce_window(b, eqn, ins):
    dtype, shape = out_type(eqn)
    p = eqn.params
    for k in ("base_dilation", "window_dilation"):
        if any(int(d) != 1 for d in p[k]):
            fail(eqn, f"reduce_window with {k} != 1 (PIR's reduce_window has no dilation)")
    attrs = {"kind": _WINDOW[eqn.primitive.name],
             "window": [int(w) for w in p["window_dimensions"]]}
    strides = [int(s) for s in p["window_strides"]]
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    padding = [[int(lo), int(hi)] for lo, hi in p["padding"]]
    if any(lo or hi for lo, hi in padding):
        attrs["padding"] = padding
    return b.op("reduce_window", ins, dtype, shape, attrs)


for _n in _WINDOW:
    RULES[_n] = _reduce_window


@rule("select_and_scatter_add")
def _select_and_scatter_add(b, eqn, ins):
    dtype, shape = out_type(eqn)
    p = eqn.params
    if getattr(p["select_prim"], "name", "") != "ge":
        fail(eqn, "only the gradient of a max reduce_window (select_prim=ge) has a PIR op")
    attrs = {"window": [int(w) for w in p["window_dimensions"]]}
    strides = [int(s) for s in p["window_strides"]]
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    padding = [[int(lo), int(hi)] for lo, hi in p["padding"]]
    if any(lo or hi for lo, hi in padding):
        attrs["padding"] = padding
    source, operand = ins
    return b.op("select_and_scatter_add", [source, operand], dtype, shape, attrs)


@rule("cumsum", "cummax", "cummin")
def _cumulative(b, eqn, ins):
    # A cumulative op is a reduce_window whose window spans the whole axis, padded on
    # one side with n-1 identity elements.
    dtype, shape = out_type(eqn)
    axis, reverse = int(eqn.params["axis"]), bool(eqn.params["reverse"])
    n = shape[axis]
    window = [1] * len(shape)
    window[axis] = n
    padding = [[0, 0] for _ in shape]
    padding[axis] = [0, n - 1] if reverse else [n - 1, 0]
    kind = {"cumsum": "sum", "cummax": "max", "cummin": "min"}[eqn.primitive.name]
    return b.op("reduce_window", ins, dtype, shape,
                {"kind": kind, "window": window, "padding": padding})


key_ok("broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "rev",
       "concatenate", "stack", "unstack", "split", "slice", "dynamic_slice",
       "dynamic_update_slice", "select_n")


def _prefix_scan(b, x, axis, reverse, combine, identity):
    """Inclusive scan along `axis` in ceil(log2 n) steps (Hillis-Steele): at step k each
    element is combined with the one k places before it (after it when `reverse`); the
    first k have the identity instead (a `pad`)."""
    n = x.shape[axis]
    ident = b.const(identity, x.dtype)
    k = 1
    while k < n:
        start = [0] * len(x.shape)
        limit = list(x.shape)
        low = [0] * len(x.shape)
        high = [0] * len(x.shape)
        if reverse:
            start[axis], high[axis] = k, k
        else:
            limit[axis], low[axis] = n - k, k
        part = list(x.shape)
        part[axis] = n - k
        s = b.op("slice", [x], x.dtype, part, {"start": start, "limit": limit})
        shifted = b.op("pad", [s, ident], x.dtype, x.shape, {"low": low, "high": high})
        x = combine(shifted, x) if not reverse else combine(x, shifted)
        k *= 2
    return x


def _logaddexp(b, x, y):
    """JAX's logaddexp: max + log1p(exp(-|x - y|)), or x + y where x - y is NaN (NaNs, or
    infinities of one sign)."""
    d, s = x.dtype, x.shape

    def op(name, *args):
        return b.op(name, list(args), d, s)

    delta = op("sub", x, y)
    isnan = b.op("compare", [delta, delta], "pred", s, {"dir": "ne"})
    soft = op("add", op("max", x, y), op("log1p", op("exp", op("neg", op("abs", delta)))))
    return b.op("select", [isnan, op("add", x, y), soft], d, s)


@rule("cumprod", "cumlogsumexp")
def _cumulative_scan(b, eqn, ins):
    # Rewrite: PIR's reduce_window has no prod or logaddexp kind, so a log-step prefix
    # scan of slice + pad + combine. Integer products are exact (wrapping); float results
    # are reassociated (JAX's own order is a reduce_window's), within rounding.
    dtype, shape = out_type(eqn)
    axis, reverse = int(eqn.params["axis"]), bool(eqn.params["reverse"])
    if eqn.primitive.name == "cumprod":
        def combine(a, c):
            return b.op("mul", [a, c], dtype, shape)
        identity = 1
    else:
        if dtype not in FLOATS:
            fail(eqn, "cumlogsumexp needs a float operand")

        def combine(a, c):
            return _logaddexp(b, a, c)
        identity = float("-inf")
    return _prefix_scan(b, ins[0], axis, reverse, combine, identity)


# ---- calls: inlined (remat and optimization_barrier: _remat.py) --------------------


@rule("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
      "custom_vjp_call_jaxpr")
def _call(b, eqn, ins):
    p = eqn.params
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        if key in p:
            sub = p[key]
            break
    else:
        fail(eqn, "a call primitive without a jaxpr parameter")
    n_in = len(sub.jaxpr.invars) if hasattr(sub, "consts") else len(sub.invars)
    # custom_vjp_call may pass extra leading operands (its consts) that the body ignores.
    return b.inline(sub, ins[len(ins) - n_in:])


key_ok("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
       "custom_vjp_call_jaxpr")


# ---- shard_map and collectives ------------------------------------------------------
from . import _control, _gather, _random, _remat, _sort, _spmd  # noqa: E402,F401  (they register their rules)

_ = (UnsupportedError, Val)
