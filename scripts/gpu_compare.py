#!/usr/bin/env python3
"""Helpers of scripts/gpu-check.sh (standard library only: the GPU machine's
Python may lack numpy, and this must not depend on it).

    gpu_compare.py inputs PROGS          deterministic inputs.safetensors for every
                                         PROGS/prog_* (from its prog.pir signature)
    gpu_compare.py run PROGS REPORT.md   run every program with --device cpu and
                                         --device cuda, compare, time, write a table
    gpu_compare.py pair A B              compare two .safetensors files

Tolerances (spec section 11, plus room for the GPU's libdevice math against
glibc's): f32 1e-4, f16/bf16 1e-2, f64 1e-9, relative to the largest magnitude
of the reference plus the element's own; integers and pred exact; NaN equals NaN.
"""

import ast
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

NPY_TYPES = {
    "f8": ("d", 8), "f4": ("f", 4), "f2": ("e", 2),
    "i8": ("q", 8), "i4": ("i", 4), "i2": ("h", 2), "i1": ("b", 1),
    "u8": ("Q", 8), "u4": ("I", 4), "u2": ("H", 2), "u1": ("B", 1), "b1": ("?", 1),
}
ST_TYPES = {
    "F64": "f8", "F32": "f4", "F16": "f2", "I64": "i8", "I32": "i4", "I16": "i2", "I8": "i1",
    "U64": "u8", "U32": "u4", "U16": "u2", "U8": "u1", "BOOL": "b1",
}
ST_OF = {v: k for k, v in ST_TYPES.items()}


def decode(kind, raw, big=False):
    if kind == "bf16":
        return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    code, size = NPY_TYPES[kind]
    n = len(raw) // size
    return list(struct.unpack(("<" if not big else ">") + code * n, raw[:n * size]))


def read_npy(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY", path
    major = b[6]
    hl = struct.unpack("<H", b[8:10])[0] if major == 1 else struct.unpack("<I", b[8:12])[0]
    start = 10 if major == 1 else 12
    h = ast.literal_eval(b[start:start + hl].decode("latin1"))
    descr = h["descr"]
    kind = descr[1:]
    shape = tuple(h["shape"])
    data = decode(kind, b[start + hl:], big=descr[0] == ">")
    if h.get("fortran_order") and len(shape) > 1:
        # Column-major: element (i0, ..., ik) is at sum(i_j * prod(shape[:j])).
        n = len(data)
        out = [None] * n
        fstr = [1] * len(shape)
        for j in range(1, len(shape)):
            fstr[j] = fstr[j - 1] * shape[j - 1]
        for c in range(n):
            rem, off = c, 0
            for j in range(len(shape) - 1, -1, -1):
                off += (rem % shape[j]) * fstr[j]
                rem //= shape[j]
            out[c] = data[off]
        data = out
    return kind, shape, data


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    out = {}
    for name, info in head.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        kind = "bf16" if info["dtype"] == "BF16" else ST_TYPES[info["dtype"]]
        out[name] = (kind, tuple(info["shape"]), decode(kind, b[8 + n + s:8 + n + e]))
    return out


def write_safetensors(path, tensors):
    head, blobs, off = {}, [], 0
    for name, (kind, shape, values) in tensors.items():
        code, size = NPY_TYPES[kind]
        raw = struct.pack("<" + code * len(values), *values)
        head[name] = {"dtype": ST_OF[kind], "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(head).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def rtol_of(kind, name):
    if kind == "f8":
        return 1e-9
    if kind in ("f2", "bf16") or "bf16" in name or "f16" in name:
        return 1e-2
    return 1e-4


def compare(ref, got, name):
    """Max relative difference and whether it is within tolerance."""
    (k1, s1, a), (k2, s2, b) = ref, got
    if s1 != s2 or len(a) != len(b):
        return math.inf, False, f"shape {s1} vs {s2}"
    if k1 not in ("f8", "f4", "f2", "bf16"):
        bad = sum(1 for x, y in zip(a, b) if x != y)
        return float(bad), bad == 0, f"{bad} differ" if bad else ""
    rtol = rtol_of(k1, name)
    m = max([abs(x) for x in a if math.isfinite(x)] or [0.0])
    worst, ok = 0.0, True
    for x, y in zip(a, b):
        if (math.isnan(x) and math.isnan(y)) or x == y:
            continue
        d = abs(x - y)
        if not math.isfinite(d):
            ok = False
            worst = math.inf
            continue
        worst = max(worst, d / (m if m > 0 else 1.0))
        if d > rtol * m + rtol * abs(x):
            ok = False
    return worst, ok, ""


def gen_inputs(progs):
    state = [0x9E3779B97F4A7C15]

    def rnd():
        x = state[0]
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        state[0] = x
        return x

    for d in sorted(os.listdir(progs)):
        if not (d.startswith("prog_") or d.startswith("bench_")):
            continue
        text = open(os.path.join(progs, d, "prog.pir")).read()
        m = re.search(r"func @main\((.*?)\)\s*->", text, re.S)
        tensors = {}
        for name, dt, shape in re.findall(r"%(\w+): (\w+)\[([\d,]*)\]", m.group(1)):
            dims = tuple(int(x) for x in shape.split(",") if x)
            n = 1
            for x in dims:
                n *= x
            kind = {"f32": "f4", "f64": "f8", "i32": "i4", "i64": "i8", "pred": "b1"}.get(dt)
            if kind is None:
                raise SystemExit(f"{d}: no generator for {dt}")
            if kind in ("f4", "f8"):
                vals = [(rnd() % 2001) / 1000.0 - 1.0 for _ in range(n)]
            elif kind == "b1":
                vals = [rnd() % 2 == 0 for _ in range(n)]
            else:
                vals = [int(rnd() % 7) for _ in range(n)]
            tensors[name] = (kind, dims, vals)
        write_safetensors(os.path.join(progs, d, "inputs.safetensors"), tensors)


def run_prog(d, dev, out):
    args = [os.path.join(d, "prog.bin"), "--device", dev, "--output", out]
    if os.path.exists(os.path.join(d, "inputs.safetensors")):
        args += ["--inputs", os.path.join(d, "inputs.safetensors")]
    for f in sorted(os.listdir(d)):
        if f.startswith("in_") and f.endswith(".npy"):
            args += ["--input", f"{f[3:-4]}={os.path.join(d, f)}"]
    t = time.time()
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return p.returncode, time.time() - t, p.stderr.strip()


def load_dir(path):
    return {f[:-4]: read_npy(os.path.join(path, f)) for f in sorted(os.listdir(path)) if f.endswith(".npy")}


def run_all(progs, report):
    rows, failures = [], 0
    same_cuda_error, last_error = 0, None
    for d in sorted(os.listdir(progs)):
        if same_cuda_error >= 5:
            rows.append(f"| (the rest) | | | | | not run: CUDA failed the same way 5 times: {last_error} |")
            failures += 1
            break
        full = os.path.join(progs, d)
        if not os.path.isdir(full) or d in ("train_mlp", "bench_matmul") or d.startswith("jax_"):
            continue
        res = {}
        for dev in ("cpu", "cuda"):
            out = os.path.join(full, f"out_{dev}")
            res[dev] = run_prog(full, dev, out) + (out,)
        (rc_c, t_c, e_c, o_c), (rc_g, t_g, e_g, o_g) = res["cpu"], res["cuda"]
        if rc_g != 0:
            same_cuda_error = same_cuda_error + 1 if e_g == last_error else 1
            last_error = e_g
        else:
            same_cuda_error = 0
        status, worst, vs_exp = "ok", 0.0, "-"
        if rc_c != 0 or rc_g != 0:
            status = f"FAIL (cpu exit {rc_c}, cuda exit {rc_g}): " + (e_g or e_c).splitlines()[-1][:200] if (e_g or e_c) else "FAIL"
        else:
          try:
            cpu, gpu = load_dir(o_c), load_dir(o_g)
            for name in cpu:
                w, ok, why = compare(cpu[name], gpu[name], d + name)
                worst = max(worst, w)
                if not ok:
                    status = f"FAIL: {name} cuda vs cpu {why} (max rel {w:.2e})"
            exp_dir = os.path.join(full, "expected")
            if os.path.isdir(exp_dir):
                exp = load_dir(exp_dir)
                we = 0.0
                for name, ref in exp.items():
                    w, ok, why = compare(ref, gpu[name], d + name)
                    we = max(we, w)
                    if not ok and status == "ok":
                        status = f"FAIL: {name} cuda vs expected {why} (max rel {w:.2e})"
                vs_exp = f"{we:.1e}"
          except Exception as e:  # a comparison problem is a failed row, not the end
            status = f"FAIL: comparison error: {e}"
        if status != "ok":
            failures += 1
        rows.append(f"| {d} | {t_c * 1e3:.0f} | {t_g * 1e3:.0f} | {worst:.1e} | {vs_exp} | {status} |")
        print(rows[-1], flush=True)
    with open(report, "w") as f:
        f.write(f"{len(rows)} programs, {failures} failed\n\n")
        f.write("| program | cpu wall ms | cuda wall ms | max rel diff cuda vs cpu | cuda vs expected | status |\n")
        f.write("|---|---|---|---|---|---|\n")
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows)} programs, {failures} failed")
    return 1 if failures else 0


def pair(a, b):
    x, y = read_safetensors(a), read_safetensors(b)
    ok_all = True
    print("\n| result | max rel diff cuda vs cpu | within tolerance |\n|---|---|---|")
    for name in x:
        w, ok, why = compare(x[name], y[name], name)
        ok_all &= ok
        print(f"| {name} | {w:.2e} {why} | {ok} |")
    return 0 if ok_all else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "inputs":
        gen_inputs(argv[2])
        return 0
    if len(argv) == 4 and argv[1] == "run":
        return run_all(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "pair":
        return pair(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
