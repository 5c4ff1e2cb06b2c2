"""PIR text pieces: element types, types, float literals, attributes, shardings.

Everything that decides how a value is spelled in PIR lives here, so the emitter and
the parameter-file writer agree on dtype names and the printed floats parse back to
the very value JAX had (spec section 10: shortest round-trip form, always with a `.`
or an exponent, or `inf`/`-inf`/`nan`).
"""

import math

import numpy as np

try:  # jax depends on ml_dtypes, so this is normally there
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    ml_dtypes = None
    _BF16 = None

_DTYPES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8",
    "bool": "pred",
}
_NP = {v: k for k, v in _DTYPES.items()}

FLOATS = ("f64", "f32", "f16", "bf16")


class PirTypeError(Exception):
    """A JAX dtype that PIR has no element type for (complex, float8, int4, ...)."""


def pir_dtype(dtype) -> str:
    """The PIR element type of a numpy / JAX dtype."""
    name = np.dtype(dtype).name
    try:
        return _DTYPES[name]
    except KeyError:
        raise PirTypeError(f"dtype {name} has no PIR element type "
                           f"(PIR has {', '.join(sorted(set(_DTYPES.values())))})") from None


def key_shape(dtype):
    """The trailing data shape of a typed PRNG key dtype (`key<fry>`: (2,)), or None."""
    impl = getattr(dtype, "_impl", None)
    if impl is None or not hasattr(impl, "key_shape"):
        return None
    return tuple(int(d) for d in impl.key_shape)


def pir_type(aval):
    """(PIR element type, shape) of a JAX aval. A typed key array key<fry>[S] is the
    u32[S..., 2] array of its key data (what `random_unwrap` gives)."""
    shape = tuple(int(d) for d in aval.shape)
    ks = key_shape(aval.dtype)
    if ks is not None:
        return "u32", shape + ks
    return pir_dtype(aval.dtype), shape


def np_dtype(pir: str) -> np.dtype:
    """The numpy dtype of a PIR element type (bf16 through ml_dtypes)."""
    if pir == "bf16":
        if _BF16 is None:
            raise PirTypeError("bf16 needs the ml_dtypes package")
        return _BF16
    return np.dtype(_NP[pir])


def type_str(dtype: str, shape) -> str:
    return f"{dtype}[{','.join(str(int(d)) for d in shape)}]"


def float_lit(value, dtype: str) -> str:
    """The shortest decimal that PIR reads back as the same `dtype` value."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    # numpy's str() of a scalar of the exact dtype is the shortest round-trip form
    # for that dtype (Dragon4, like Python's repr for f64).
    s = str(np_dtype(dtype).type(v))
    if "." not in s and "e" not in s and "E" not in s:
        s += ".0"
    # "1e+16" and "1.5e-05" are both valid PIR; a bare "1e16" would be too.
    return s


def scalar_lit(value, dtype: str) -> str:
    if dtype == "pred":
        return "true" if bool(value) else "false"
    if dtype in FLOATS:
        return float_lit(value, dtype)
    return str(int(value))


def array_lit(arr: np.ndarray, dtype: str) -> str:
    """A nested-list literal for `constant` (row-major)."""
    if arr.ndim == 0:
        return scalar_lit(arr.item() if dtype != "bf16" else float(arr), dtype)

    def rec(a):
        if a.ndim == 1:
            return "[" + ",".join(scalar_lit(x, dtype) for x in a.tolist()) + "]"
        return "[" + ",".join(rec(sub) for sub in a) + "]"

    if dtype == "bf16":
        arr = arr.astype(np.float32)
    return rec(arr)


class Quoted(str):
    """An attribute value printed in double quotes (the convolution `dims` string)."""


def attr_value(v) -> str:
    if isinstance(v, Quoted):
        return f'"{v}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return float_lit(v, "f64")
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(attr_value(x) for x in v) + "]"
    return str(v)


def attrs_str(attrs) -> str:
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k}={attr_value(v)}" for k, v in attrs.items()) + "}"


def sharding_str(entries) -> str:
    """`on [...]` text from per-dimension entries: None, an axis name, or a tuple of names."""
    parts = []
    for e in entries:
        if e is None:
            parts.append("_")
        elif isinstance(e, str):
            parts.append(e)
        else:
            e = tuple(e)
            if len(e) == 0:
                parts.append("_")
            elif len(e) == 1:
                parts.append(e[0])
            else:
                parts.append("(" + ", ".join(e) + ")")
    return "on [" + ", ".join(parts) + "]"
