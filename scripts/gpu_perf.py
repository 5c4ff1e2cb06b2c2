#!/usr/bin/env python3
"""Speed against the device's limits and against JAX on the same device (issue 15, part 7).

    python3 scripts/gpu_perf.py prepare --pjc target/release/pjc DIR   # here: compiles
    python3 scripts/gpu_perf.py run DIR --device cuda --out REPORT.md   # there: times

`prepare` writes each benchmark's program and compiled executable into DIR/NAME/
(`run` writes their constant-filled inputs, so the bundle stays small):

  elementwise  y = x * 1.5 + 0.25 over f32[2^26] (256 MiB in, 256 MiB out): bandwidth
  gemm_f32     f32[4096,4096] x f32[4096,4096] (cuBLAS SgemmStridedBatched)
  gemm_bf16    bf16[4096,4096] x bf16[4096,4096] -> f32 (cuBLAS GemmEx, f32 compute)
  conv3x3      ResNet's 3x3 64->64 convolution, f32 [32,56,56,64] NHWC, SAME padding
  conv3x3_s2_dgrad / _wgrad   the input and kernel gradients of ResNet's 3x3/2 64->128
               convolution as JAX writes them (cuDNN backward data / backward filter)
  gpt_block    benches/gpt_block/gen.py: a GPT block forward, [8,256,512], 8 heads
  resnet50     examples/jax_resnet/resnet50.pir on one device: a ResNet-50 training step,
               batch 8 at 224x224 (images/s; model FLOPs from XLA's cost analysis)

`run` times each executable in loop mode with --trace (the CUDA backend synchronizes
after every step while tracing, so each step's time is its device time), median of the
steps after the first, and the same computation under `jax.jit` on the same device
(median after warm-up), and writes a markdown table: ms per step for both, pjc / JAX,
and pjc's achieved bandwidth or FLOP rate as a fraction of the device's limit (the
elementwise kernel against XLA's own elementwise kernel and the nominal memory
bandwidth; products against XLA, which calls cuBLAS/cuDNN; model FLOP utilisation of
the dense peak). Each row says where pjc's convolutions ran (the trace's "cudnn" steps:
cuDNN, else the generated device kernels, when libcudnn is absent). JAX runs with
jax_default_matmul_precision=highest: full f32 like pjc (spec section 11), no TF32.
`--device cpu` runs the same on the CPU (a dry run of the script; `--only` picks rows).
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Dense peaks (FLOP/s: f32 without tensor cores, bf16 tensor cores) and memory
# bandwidth (B/s) of the GPUs the project is lent, from the vendors' data sheets.
PEAKS = {
    "H200": {"f32": 67e12, "bf16": 989e12, "bw": 4.8e12},
    "H100": {"f32": 67e12, "bf16": 989e12, "bw": 3.35e12},
    "A100": {"f32": 19.5e12, "bf16": 312e12, "bw": 2.0e12},
}

N_EW = 1 << 26
MM = 4096

PROGRAMS = {
    "elementwise": (
        f"""func @main(%x: f32[{N_EW}]) -> (y: f32[{N_EW}]) {{
  %a = constant 1.5 : f32[{N_EW}]
  %b = constant 0.25 : f32[{N_EW}]
  %m = mul %x, %a
  %y = add %m, %b
  return %y
}}
""",
        {"x": ("F32", [N_EW])},
        {"bytes": 2 * 4 * N_EW},
    ),
    "gemm_f32": (
        f"""func @main(%a: f32[{MM},{MM}], %b: f32[{MM},{MM}]) -> (c: f32[{MM},{MM}]) {{
  %c = dot_general %a, %b {{lhs_contract=[1], rhs_contract=[0]}} : f32[{MM},{MM}]
  return %c
}}
""",
        {"a": ("F32", [MM, MM]), "b": ("F32", [MM, MM])},
        {"flop": 2 * MM**3, "peak": "f32"},
    ),
    "gemm_bf16": (
        f"""func @main(%a: bf16[{MM},{MM}], %b: bf16[{MM},{MM}]) -> (c: f32[{MM},{MM}]) {{
  %c = dot_general %a, %b {{lhs_contract=[1], rhs_contract=[0]}} : f32[{MM},{MM}]
  return %c
}}
""",
        {"a": ("BF16", [MM, MM]), "b": ("BF16", [MM, MM])},
        {"flop": 2 * MM**3, "peak": "bf16"},
    ),
    "conv3x3": (
        """func @main(%x: f32[32,56,56,64], %k: f32[3,3,64,64]) -> (y: f32[32,56,56,64]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1, 1], [1, 1]]} : f32[32,56,56,64]
  return %y
}
""",
        {"x": ("F32", [32, 56, 56, 64]), "k": ("F32", [3, 3, 64, 64])},
        {"flop": 2 * 32 * 56 * 56 * 64 * 9 * 64, "peak": "f32"},
    ),
    # jax.grad of a 3x3/2 convolution with padding [[1,1],[1,1]] (56 -> 28): the
    # input gradient (input dilated by the stride) and the kernel gradient.
    "conv3x3_s2_dgrad": (
        """func @main(%dy: f32[32,28,28,128], %k: f32[3,3,64,128]) -> (dx: f32[32,56,56,64]) {
  %dx = convolution %dy, %k {dims="b01f_01oi->b01f", padding=[[1,2],[1,2]], lhs_dilation=[2,2]} : f32[32,56,56,64]
  return %dx
}
""",
        {"dy": ("F32", [32, 28, 28, 128]), "k": ("F32", [3, 3, 64, 128])},
        {"flop": 2 * 32 * 28 * 28 * 128 * 9 * 64, "peak": "f32"},
    ),
    "conv3x3_s2_wgrad": (
        """func @main(%x: f32[32,56,56,64], %dy: f32[32,28,28,128]) -> (dw: f32[3,3,64,128]) {
  %dw = convolution %x, %dy {dims="f01b_i01o->01bf", padding=[[1,0],[1,0]], rhs_dilation=[2,2]} : f32[3,3,64,128]
  return %dw
}
""",
        {"x": ("F32", [32, 56, 56, 64]), "dy": ("F32", [32, 28, 28, 128])},
        {"flop": 2 * 32 * 28 * 28 * 128 * 9 * 64, "peak": "f32"},
    ),
}

# The same computations for jax.jit (inputs as the executables get them).
JAX_TWIN = r'''
import json, statistics, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_default_matmul_precision", "highest")
name, steps = sys.argv[1], int(sys.argv[2])
f32, bf16 = jnp.float32, jnp.bfloat16
if name == "elementwise":
    args = (jnp.full((1 << 26,), 0.5, f32),)
    f = lambda x: x * 1.5 + 0.25
elif name == "gemm_f32":
    args = (jnp.full((4096, 4096), 0.5, f32),) * 2
    f = lambda a, b: jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST)
elif name == "gemm_bf16":
    args = (jnp.full((4096, 4096), 0.5, bf16),) * 2
    f = lambda a, b: jnp.dot(a, b, preferred_element_type=f32)
elif name == "conv3x3":
    args = (jnp.full((32, 56, 56, 64), 0.5, f32), jnp.full((3, 3, 64, 64), 0.5, f32))
    f = lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                  precision=jax.lax.Precision.HIGHEST)
elif name.startswith("conv3x3_s2"):
    conv = lambda x, k: jax.lax.conv_general_dilated(x, k, (2, 2), [(1, 1), (1, 1)], dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                     precision=jax.lax.Precision.HIGHEST)
    x0, k0 = jnp.full((32, 56, 56, 64), 0.5, f32), jnp.full((3, 3, 64, 128), 0.5, f32)
    dy = jnp.full((32, 28, 28, 128), 0.5, f32)
    if name.endswith("dgrad"):
        args = (dy, k0)
        f = lambda dy, k: jax.vjp(lambda x: conv(x, k), x0)[1](dy)[0]
    else:
        args = (x0, dy)
        f = lambda x, dy: jax.vjp(lambda k: conv(x, k), k0)[1](dy)[0]
g = jax.jit(f)
g(*args).block_until_ready(); g(*args).block_until_ready()
ts = []
for _ in range(steps):
    t = time.perf_counter(); g(*args).block_until_ready(); ts.append(time.perf_counter() - t)
print(json.dumps({"ms": statistics.median(ts) * 1e3, "device": str(jax.devices()[0].device_kind), "jax": jax.__version__}))
'''


# ResNet-50's training step under jax.jit (examples/jax_resnet/model.py), and the
# executable's inputs: `inputs DIR` writes DIR/inputs.safetensors (parameters under
# their PIR names, 8 images and labels); `time DIR STEPS` prints the median step and
# XLA's count of the step's FLOPs.
RESNET_TWIN = r'''
import json, statistics, sys, time
from pathlib import Path
d = Path(sys.argv[2])
sys.path.insert(0, str(d / "examples/jax_resnet"))
sys.path.insert(0, str(d / "python"))
import data
if sys.argv[1] == "inputs":
    from jax2pir import safetensors
    images, labels = data.dataset(8, "resnet50")
    t = safetensors.flatten(data.init_params("resnet50"), "params")
    t.update({"images": images, "labels": labels})
    safetensors.write(d / "inputs.safetensors", t)
    sys.exit(0)
import jax, jax.numpy as jnp
jax.config.update("jax_default_matmul_precision", "highest")
import model
steps = int(sys.argv[3])
images, labels = data.dataset(8, "resnet50")
params = jax.tree.map(jnp.asarray, data.init_params("resnet50"))
args = (params, jnp.asarray(images), jnp.asarray(labels))
g = jax.jit(model.train_step)
cost = g.lower(*args).compile().cost_analysis()
cost = cost[0] if isinstance(cost, list) else cost
out = g(*args); jax.block_until_ready(out); out = g(*args); jax.block_until_ready(out)
ts = []
for _ in range(steps):
    t = time.perf_counter(); jax.block_until_ready(g(*args)); ts.append(time.perf_counter() - t)
print(json.dumps({"ms": statistics.median(ts) * 1e3, "device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
                  "flop": float(cost.get("flops", 0.0))}))
'''


def write_constant_safetensors(path, tensors):
    """tensors: name -> (dtype, shape), every element 0.5 (f32 0x3F000000, bf16 0x3F00)."""
    size = {"F32": 4, "BF16": 2}
    pattern = {"F32": struct.pack("<f", 0.5), "BF16": b"\x00\x3f"}
    header, off = {}, 0
    for n, (d, shape) in tensors.items():
        nbytes = size[d]
        for s in shape:
            nbytes *= s
        header[n] = {"dtype": d, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for n, (d, shape) in tensors.items():
            count = 1
            for s in shape:
                count *= s
            chunk = pattern[d] * (1 << 20)
            full, rest = divmod(count, 1 << 20)
            for _ in range(full):
                f.write(chunk)
            f.write(pattern[d] * rest)


def prepare(a):
    out = Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, (src, inputs, meta) in PROGRAMS.items():
        d = out / name
        d.mkdir(exist_ok=True)
        (d / "prog.pir").write_text(src)
        subprocess.run([a.pjc, "compile", str(d / "prog.pir"), "-o", str(d / "prog.bin")], check=True)
        (d / "meta.json").write_text(json.dumps({**meta, "inputs": inputs}))
    # The GPT block and its JAX twin (benches/gpt_block).
    d = out / "gpt_block"
    d.mkdir(exist_ok=True)
    info = json.loads(subprocess.run([sys.executable, str(ROOT / "benches/gpt_block/gen.py"), str(d)], check=True, capture_output=True, text=True).stdout)
    subprocess.run([a.pjc, "compile", str(d / "block.pir"), "-o", str(d / "prog.bin")], check=True)
    (d / "meta.json").write_text(json.dumps({"flop": info["gflop"] * 1e9, "peak": "f32", "twin": "gpt_block", "tokens": 8 * 256}))
    for f in ["jax_block.py"]:
        (d / f).write_text((ROOT / "benches/gpt_block" / f).read_text())
    # ResNet-50's training step on one device, with what makes its inputs there
    # (numpy: the data generator and the safetensors writer).
    d = out / "resnet50"
    (d / "examples/jax_resnet").mkdir(parents=True, exist_ok=True)
    (d / "python/jax2pir").mkdir(parents=True, exist_ok=True)
    for f in ["data.py", "model.py"]:
        (d / "examples/jax_resnet" / f).write_text((ROOT / "examples/jax_resnet" / f).read_text())
    for f in (ROOT / "python/jax2pir").glob("*.py"):
        (d / "python/jax2pir" / f.name).write_text(f.read_text())
    subprocess.run([a.pjc, "compile", str(ROOT / "examples/jax_resnet/resnet50.pir"), "--mesh", "data=1", "-o", str(d / "prog.bin")], check=True)
    (d / "meta.json").write_text(json.dumps({"peak": "f32", "twin": "resnet50", "images": 8}))
    print(f"prepared {out}")


def pjc_ms(d, device, steps):
    """The median step (ms) and where the convolution steps ran."""
    trace = d / f"trace_{device}.json"
    subprocess.run([str(d / "prog.bin"), "--device", device, "--inputs", str(d / "inputs.safetensors"), "--output", str(d / f"out_{device}.safetensors"),
                    "--steps", str(steps), "--log-every", str(steps), "--trace", str(trace)], check=True, capture_output=True)
    t = json.loads(trace.read_text())
    ev = t["traceEvents"] if isinstance(t, dict) else t
    steps = sorted((e for e in ev if e.get("cat") == "step"), key=lambda e: e["ts"])
    kept = steps[1:] if len(steps) > 1 else steps
    convs = [e for e in ev if e.get("name") == "convolution"]
    route = ""
    if convs:
        on = sum(e.get("cat") == "cudnn" for e in convs)
        route = f"; convolutions: {on} of {len(convs)} steps on cuDNN" if device == "cuda" else ""
    return statistics.median(e["dur"] / 1e3 for e in kept), route


def run(a):
    root = Path(a.dir)
    lines = []
    device_kind = None
    for name in list(PROGRAMS) + ["gpt_block", "resnet50"]:
        d = root / name
        if not (d / "prog.bin").exists() or (a.only and name not in a.only.split(",")):
            continue
        meta = json.loads((d / "meta.json").read_text())
        env = dict(os.environ)
        if a.device == "cpu":
            env["JAX_PLATFORMS"] = "cpu"
        if "inputs" in meta and not (d / "inputs.safetensors").exists():
            write_constant_safetensors(d / "inputs.safetensors", {k: tuple(v) for k, v in meta["inputs"].items()})
        if meta.get("twin") == "resnet50" and not (d / "inputs.safetensors").exists():
            subprocess.run([a.python, "-c", RESNET_TWIN, "inputs", str(d)], check=True, env=env)
        ours, route = pjc_ms(d, a.device, a.steps)
        if meta.get("twin") == "resnet50":
            j = json.loads(subprocess.run([a.python, "-c", RESNET_TWIN, "time", str(d), str(a.steps)], check=True, capture_output=True, text=True, env=env).stdout)
            meta["flop"] = j["flop"]
        elif meta.get("twin") == "gpt_block":
            j = json.loads(subprocess.run([a.python, str(d / "jax_block.py"), str(d), str(a.steps)], check=True, capture_output=True, text=True, env=env).stdout)
        else:
            j = json.loads(subprocess.run([a.python, "-c", JAX_TWIN, name, str(a.steps)], check=True, capture_output=True, text=True, env=env).stdout)
        device_kind = device_kind or j.get("device")
        peak = next((v for k, v in PEAKS.items() if device_kind and k in device_kind), None) if a.device == "cuda" else None
        if "bytes" in meta:
            rate = f"{meta['bytes'] / ours / 1e6:.0f} GB/s"
            xla_rate = meta["bytes"] / j["ms"] / 1e6
            frac = f"{meta['bytes'] / ours / 1e6 / xla_rate:.2f} of XLA's {xla_rate:.0f} GB/s"
            if peak:
                frac += f"; {meta['bytes'] / ours / 1e-3 / peak['bw']:.2f} of {peak['bw'] / 1e12:.2f} TB/s nominal"
        else:
            rate = f"{meta['flop'] / ours / 1e9:.1f} TFLOP/s" if a.device == "cuda" else f"{meta['flop'] / ours / 1e6:.0f} GFLOP/s"
            frac = f"{j['ms'] / ours:.2f} of XLA's rate"
            if peak:
                frac += f"; MFU {meta['flop'] / ours / 1e-3 / peak[meta['peak']]:.2f} of {meta['peak']} peak"
        extra = f", {meta['tokens'] / ours * 1e3:.0f} tokens/s (JAX {meta['tokens'] / j['ms'] * 1e3:.0f})" if "tokens" in meta else ""
        if "images" in meta:
            extra = f", {meta['images'] / ours * 1e3:.1f} images/s (JAX {meta['images'] / j['ms'] * 1e3:.1f})"
        frac += route
        lines.append(f"| {name} | {ours:.3f} | {j['ms']:.3f} | {ours / j['ms']:.2f} | {rate}{extra} | {frac} |")
        print(lines[-1], flush=True)
    head = [f"Speed on {device_kind or a.device} ({time.strftime('%Y-%m-%d')}, `scripts/gpu_perf.py run --device {a.device}`): "
            f"median ms per step of {a.steps} (pjc: loop mode with --trace, first step left out; JAX: jax.jit, after warm-up).", "",
            "| benchmark | pjc ms | JAX ms | pjc / JAX | pjc rate | against the limit |", "|---|---:|---:|---:|---:|---|"]
    text = "\n".join(head + lines) + "\n"
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n" + text)
    print(text)


def routes(a):
    """How many convolution steps of a CUDA trace ran on cuDNN (of `want` the plan routes there)."""
    t = json.loads(Path(a.trace).read_text())
    ev = t["traceEvents"] if isinstance(t, dict) else t
    convs = [e for e in ev if e.get("name") == "convolution"]
    on = sum(e.get("cat") == "cudnn" for e in convs)
    verdict = "as planned" if on == a.want else ("libcudnn did not load: the device kernels ran" if on == 0 else "some fell back to their device kernels")
    print(f"\ncuDNN: {on} of {len(convs)} convolution steps ran on cuDNN, {a.want} planned ({verdict}).")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--pjc", required=True)
    p.add_argument("dir")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--python", default=sys.executable, help="a Python with jax (for CUDA on the GPU machine)")
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--out")
    r.add_argument("--only", help="comma-separated benchmark names (default: all prepared)")
    q = sub.add_parser("routes")
    q.add_argument("trace")
    q.add_argument("want", type=int)
    a = ap.parse_args()
    {"prepare": prepare, "run": run, "routes": routes}[a.cmd](a)


if __name__ == "__main__":
    main()
