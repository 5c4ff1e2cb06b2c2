"""A safetensors reader and writer with the standard library and numpy only.

The format: an 8-byte little-endian header length, a JSON header mapping each tensor's
name to its dtype, shape and byte range, then the raw row-major little-endian bytes.
"""

import json
import struct

import numpy as np

from ._text import np_dtype, pir_dtype

_ST = {"f64": "F64", "f32": "F32", "f16": "F16", "bf16": "BF16", "i64": "I64",
       "i32": "I32", "i16": "I16", "i8": "I8", "u64": "U64", "u32": "U32", "u16": "U16",
       "u8": "U8", "pred": "BOOL"}
_PIR = {v: k for k, v in _ST.items()}


def write(path, tensors):
    """Write {name: array} to `path` (names sorted, as the reference writer does)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])  # (ascontiguousarray would make a scalar 1-d)
        dt = pir_dtype(arr.dtype)
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {"dtype": _ST[dt], "shape": [int(d) for d in arr.shape],
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for blob in blobs:
            f.write(blob)


def read(path):
    """{name: numpy array} from a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        dt = np_dtype(_PIR[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(raw[base + lo:base + hi], dtype=dt).reshape(info["shape"]).copy()
    return out


def flatten(tree, prefix):
    """{name: array} for a tree of dicts and lists, named as jax2pir names parameters
    (`prefix_key_index_...`, dict keys sorted) — for data scripts that have no JAX."""
    out = {}
    if isinstance(tree, dict):
        for k in sorted(tree):
            out.update(flatten(tree[k], f"{prefix}_{k}"))
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            out.update(flatten(v, f"{prefix}_{i}"))
    else:
        out[prefix] = tree
    return out
