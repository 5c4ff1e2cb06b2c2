#!/usr/bin/env python3
"""Inputs for examples/mlp.pir, and an independent check of what pjc computed.

Standard library only (no numpy), so it runs on a bare machine:

    python3 examples/make_inputs.py gen DIR
        writes DIR/{x,labels,w1,b1,w2,b2}.npy and the same tensors in
        DIR/inputs.safetensors, all float32, from a fixed-seed generator
        (the same bytes on every machine and every run).

    python3 examples/make_inputs.py dataset DIR M
        writes a training set for examples/mlp_train.pir's loop mode:
        DIR/train_x.npy (f32[M,784]) and DIR/train_labels.npy (f32[M,10],
        one-hot). Example i of class c is noise plus a brighter band of
        pixels at a class-specific place, so a few passes lower the loss.

    python3 examples/make_inputs.py check DIR RESULT
        reads the inputs back from DIR and pjc's results from RESULT (a
        directory of NAME.npy, or a .safetensors file), recomputes the MLP in
        float64, prints a summary of each result and exits 1 when `loss` or
        `logits` differ from the recomputation by more than PIR's f32
        reassociation tolerance (rtol 1e-4).
"""

import ast
import json
import math
import operator
import os
import struct
import sys

BATCH, IN, HIDDEN, CLASSES = 64, 784, 128, 10
RTOL = 1e-4

# ---- a tiny deterministic generator (splitmix64) ------------------------------------


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def uniform(self, lo, hi):
        """A float in [lo, hi) from the top 24 bits (exact in float32 before scaling)."""
        return lo + (hi - lo) * ((self.next_u64() >> 40) / float(1 << 24))


def make_inputs(seed=20240601):
    rng = SplitMix64(seed)

    def uniform(n, scale):
        return [rng.uniform(-scale, scale) for _ in range(n)]

    x = [rng.uniform(0.0, 1.0) for _ in range(BATCH * IN)]  # pixel-like values
    labels = [0.0] * (BATCH * CLASSES)
    for i in range(BATCH):
        labels[i * CLASSES + rng.next_u64() % CLASSES] = 1.0
    return {
        "x": ((BATCH, IN), x),
        "labels": ((BATCH, CLASSES), labels),
        "w1": ((IN, HIDDEN), uniform(IN * HIDDEN, 1.0 / math.sqrt(IN))),
        "b1": ((HIDDEN,), uniform(HIDDEN, 0.1)),
        "w2": ((HIDDEN, CLASSES), uniform(HIDDEN * CLASSES, 1.0 / math.sqrt(HIDDEN))),
        "b2": ((CLASSES,), uniform(CLASSES, 0.1)),
    }


# ---- .npy and .safetensors, little-endian, row-major ---------------------------------

NPY_DESCR = {"<f8": "d", "<f4": "f", "<f2": "e", "<i8": "q", "<i4": "i", "<i2": "h",
             "|i1": "b", "<u8": "Q", "<u4": "I", "<u2": "H", "|u1": "B", "|b1": "?"}
ST_DTYPE = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "I16": "h",
            "I8": "b", "U64": "Q", "U32": "I", "U16": "H", "U8": "B", "BOOL": "?"}


def f32_bytes(values):
    return struct.pack("<%df" % len(values), *values)


def write_npy(path, shape, values):
    shape_text = "(%d,)" % shape[0] if len(shape) == 1 else "(%s)" % ", ".join(map(str, shape))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    # magic(6) + version(2) + length(2) + header + '\n', padded to a multiple of 64
    pad = -(10 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
        f.write(f32_bytes(values))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    if data[6] == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError("%s: Fortran-order arrays are not supported" % path)
    code = NPY_DESCR.get(header["descr"])
    if code is None:
        raise ValueError("%s: unsupported dtype %r" % (path, header["descr"]))
    shape = tuple(header["shape"])
    n = math.prod(shape)
    body = data[start + hlen:]
    values = list(struct.unpack("<%d%s" % (n, code), body[:n * struct.calcsize(code)]))
    return header["descr"], shape, values


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, (shape, values) in tensors.items():
        blob = f32_bytes(values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode("utf-8"))
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    body = data[8 + hlen:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        shape = tuple(info["shape"])
        n = math.prod(shape)
        if info["dtype"] == "BF16":  # widen to f32: bf16 is the top half of an f32
            raw = struct.unpack("<%dH" % n, body[lo:hi])
            values = list(struct.unpack("<%df" % n, struct.pack("<%dI" % n, *(r << 16 for r in raw))))
        else:
            code = ST_DTYPE.get(info["dtype"])
            if code is None:
                raise ValueError("%s: unsupported dtype %s" % (path, info["dtype"]))
            values = list(struct.unpack("<%d%s" % (n, code), body[lo:hi]))
        out[name] = (info["dtype"], shape, values)
    return out


def read_result(path):
    """name -> (dtype, shape, values) from a .safetensors file or a directory of .npy."""
    if path.endswith(".safetensors"):
        return read_safetensors(path)
    return {fn[:-4]: read_npy(os.path.join(path, fn))
            for fn in sorted(os.listdir(path)) if fn.endswith(".npy")}


# ---- the reference computation -------------------------------------------------------


def matmul(a, rows, inner, b, cols):
    bt = [b[k::cols] for k in range(cols)]  # columns of b
    return [sum(map(operator.mul, a[i * inner:(i + 1) * inner], bt[j]))
            for i in range(rows) for j in range(cols)]


def reference(inp):
    x, labels, w1, b1, w2, b2 = (inp[k] for k in ("x", "labels", "w1", "b1", "w2", "b2"))
    xw1 = matmul(x, BATCH, IN, w1, HIDDEN)
    h = [max(v + b1[i % HIDDEN], 0.0) for i, v in enumerate(xw1)]
    hw2 = matmul(h, BATCH, HIDDEN, w2, CLASSES)
    logits = [v + b2[i % CLASSES] for i, v in enumerate(hw2)]
    total = 0.0
    for r in range(BATCH):
        row = logits[r * CLASSES:(r + 1) * CLASSES]
        m = max(row)
        lse = math.log(sum(math.exp(v - m) for v in row))
        total += sum(l * (v - m - lse) for l, v in zip(labels[r * CLASSES:(r + 1) * CLASSES], row))
    return {"loss": ((), [-total / BATCH]), "logits": ((BATCH, CLASSES), logits)}


def summarize(name, dtype, shape, values):
    finite = [v for v in values if math.isfinite(v)]
    stats = ""
    if finite:
        stats = "min %.6g  max %.6g  mean %.6g" % (min(finite), max(finite), sum(finite) / len(finite))
    head = ", ".join("%.6g" % v for v in values[:4]) + (", ..." if len(values) > 4 else "")
    print("  %-8s %-4s shape %-10s %s  [%s]" % (name, dtype, list(shape), stats, head))


def check(input_dir, result_path):
    inputs = {name: read_npy(os.path.join(input_dir, name + ".npy"))[2]
              for name in ("x", "labels", "w1", "b1", "w2", "b2")}
    got = read_result(result_path)
    print("results in %s:" % result_path)
    for name, (dtype, shape, values) in got.items():
        summarize(name, dtype, shape, values)
    ok = True
    for name, (shape, exp) in reference(inputs).items():
        if name not in got:
            print("check: FAILED: result %r is missing" % name)
            ok = False
            continue
        _, gshape, gval = got[name]
        if tuple(gshape) != shape:
            print("check: FAILED: %s has shape %s, expected %s" % (name, list(gshape), list(shape)))
            ok = False
            continue
        scale = max(abs(v) for v in exp)
        worst = max(abs(g - e) - RTOL * scale - RTOL * abs(e) if math.isfinite(g) else math.inf
                    for g, e in zip(gval, exp))
        maxdiff = max(abs(g - e) for g, e in zip(gval, exp))
        if worst > 0:
            print("check: FAILED: %s differs from the float64 reference (max |diff| %.3g)" % (name, maxdiff))
            ok = False
        else:
            print("check: %s matches the float64 reference (max |diff| %.3g)" % (name, maxdiff))
    if ok:
        print("check: loss = %.6f (a random 10-class guess gives about ln 10 = %.4f)"
              % (got["loss"][2][0], math.log(10)))
    return ok


def make_dataset(m, seed=7):
    rng = SplitMix64(seed)
    band = IN // CLASSES
    x, labels = [], [0.0] * (m * CLASSES)
    for i in range(m):
        c = rng.next_u64() % CLASSES
        labels[i * CLASSES + c] = 1.0
        row = [rng.uniform(0.0, 0.5) for _ in range(IN)]
        for j in range(c * band, (c + 1) * band):
            row[j] += 0.5
        x.extend(row)
    return {"train_x": ((m, IN), x), "train_labels": ((m, CLASSES), labels)}


def main(argv):
    if len(argv) == 4 and argv[1] == "dataset":
        out, m = argv[2], int(argv[3])
        os.makedirs(out, exist_ok=True)
        for name, (shape, values) in make_dataset(m).items():
            write_npy(os.path.join(out, name + ".npy"), shape, values)
        print("wrote %s/train_x.npy (f32[%d,%d]) and %s/train_labels.npy (f32[%d,%d])" % (out, m, IN, out, m, CLASSES))
        return 0
    if len(argv) == 3 and argv[1] == "gen":
        out = argv[2]
        os.makedirs(out, exist_ok=True)
        tensors = make_inputs()
        for name, (shape, values) in tensors.items():
            write_npy(os.path.join(out, name + ".npy"), shape, values)
        write_safetensors(os.path.join(out, "inputs.safetensors"), tensors)
        print("wrote %s/{%s}.npy and %s/inputs.safetensors (float32)"
              % (out, ",".join(tensors), out))
        return 0
    if len(argv) == 4 and argv[1] == "check":
        return 0 if check(argv[2], argv[3]) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
