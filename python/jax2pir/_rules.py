"""The primitive table: one rule per JAX primitive, each emitting PIR statements.

A rule is `rule(builder, eqn, ins) -> Val | [Val]`, where `ins` are the PIR values of
the equation's operands (literals already turned into scalar constants). Rules that
need a rewrite (PIR has no such op) say so in a comment; docs/jax.md lists them all.
Gather and scatter-add live in `_gather.py`, the shard_map collectives in `_spmd.py`.
"""

from ._builder import UnsupportedError, Val, fail
from ._text import FLOATS, pir_dtype

RULES = {}


def rule(*names):
    def deco(f):
        for n in names:
            RULES[n] = f
        return f

    return deco


def out_type(eqn, i=0):
    aval = eqn.outvars[i].aval
    return pir_dtype(aval.dtype), tuple(int(d) for d in aval.shape)


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


@rule("stop_gradient", "copy", "copy_p", "pvary", "reshard", "optimization_barrier",
      "device_put", "name")
def _identity(b, eqn, ins):
    # stop_gradient only matters to differentiation, which JAX has already done; the
    # others are layout or scheduling hints with no meaning in PIR.
    return list(ins)


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
    return b.broadcast(x, shape, dims)


@rule("reshape")
def _reshape(b, eqn, ins):
    _, shape = out_type(eqn)
    x = ins[0]
    dims = eqn.params.get("dimensions")
    if dims is not None:  # XLA's reshape with a dimension order: transpose, then reshape
        x = b.transpose(x, dims)
    return b.reshape(x, shape)


@rule("squeeze", "expand_dims")
def _squeeze(b, eqn, ins):
    _, shape = out_type(eqn)
    return b.reshape(ins[0], shape)


@rule("transpose")
def _transpose(b, eqn, ins):
    return b.transpose(ins[0], eqn.params["permutation"])


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
    if len(ins) == 1:
        return ins[0]
    return b.op("concat", ins, dtype, shape, {"dim": int(eqn.params["dimension"])})


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
    attrs = {"low": [c[0] for c in cfg], "high": [c[1] for c in cfg]}
    if any(c[2] for c in cfg):
        attrs["interior"] = [c[2] for c in cfg]
    return b.op("pad", ins, dtype, shape, attrs)


@rule("slice")
def _slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    attrs = {"start": [int(s) for s in eqn.params["start_indices"]],
             "limit": [int(s) for s in eqn.params["limit_indices"]]}
    strides = eqn.params.get("strides")
    if strides is not None and any(int(s) != 1 for s in strides):
        attrs["stride"] = [int(s) for s in strides]
    return b.op("slice", ins, dtype, shape, attrs)


@rule("dynamic_slice")
def _dynamic_slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    return b.op("dynamic_slice", ins, dtype, shape,
                {"sizes": [int(s) for s in eqn.params["slice_sizes"]]})


@rule("dynamic_update_slice")
def _dynamic_update_slice(b, eqn, ins):
    dtype, shape = out_type(eqn)
    return b.op("dynamic_update_slice", ins, dtype, shape)


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


# ---- calls: inlined ----------------------------------------------------------------


@rule("jit", "pjit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
      "custom_vjp_call", "custom_vjp_call_jaxpr", "remat2")
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


# ---- shard_map and collectives ------------------------------------------------------
from . import _gather, _spmd  # noqa: E402,F401  (they register their rules)

_ = (UnsupportedError, Val)
