#!/usr/bin/env python3
"""A GPT block's forward pass at a size people train, for the step-time benchmark.

    python3 benches/gpt_block/gen.py DIR [--batch 8 --seq 256 --d-model 512 --heads 8 --ff 2048]

writes DIR/block.pir (one device; --mesh data=D,model=M with Megatron shardings; or
--mesh data=D: the batch split, the weights replicated) and
DIR/inputs.safetensors (fixed-seed f32 values; standard library only, no numpy).

    python3 benches/gpt_block/gen.py DIR --layers 24 --stack scan|unrolled

writes a stack of 24 such blocks (one device): `scan` as flax's `nn.scan` exports
it — the weights stacked along a new dimension 0 and one `scan` over them whose
step is the block (`@layer`), the activations the carry — or `unrolled`, the 24
blocks one after the other, each with weights of its own; the same values either
way (layer i's weights are slice i of the stacked ones).

The block is pre-norm attention and an MLP, written the way jax2pir exports
`flax.linen` code: activations [batch, seq, d_model], projections to [batch, seq,
heads, head_dim], attention products batched over (batch, heads) in place, so every
product is a 3-D x 2-D or a batched 4-D product with batch dimensions that are not
leading on one side.
"""

import argparse
import json
import math
import random
import re
import struct
from pathlib import Path


def pir(b, s, d, h, f, mesh):
    hd = d // h
    split = mesh is not None
    # Without a `model` axis (data parallelism only) the weights are replicated.
    model = split and "model=" in mesh
    on = (lambda spec: f" on [{spec if model else spec.replace('model', '_')}]") if split else (lambda spec: "")
    lines = []
    if split:
        lines.append(f"mesh [{mesh}]")
        lines.append("")
    lines.append(f"""func @layer_norm(%x: f32[{b},{s},{d}]) -> (f32[{b},{s},{d}]) {{
  %s = reduce %x {{dims=[2], kind=sum}} : f32[{b},{s}]
  %n = constant {float(d)} : f32[{b},{s}]
  %mean = div %s, %n
  %mb = broadcast %mean {{dims=[0,1]}} : f32[{b},{s},{d}]
  %xc = sub %x, %mb
  %sq = mul %xc, %xc
  %vs = reduce %sq {{dims=[2], kind=sum}} : f32[{b},{s}]
  %var = div %vs, %n
  %eps = constant 1e-05 : f32[{b},{s}]
  %ve = add %var, %eps
  %inv = rsqrt %ve
  %ib = broadcast %inv {{dims=[0,1]}} : f32[{b},{s},{d}]
  %y = mul %xc, %ib
  return %y
}}
""")
    lines.append(
        f"func @main(%x: f32[{b},{s},{d}]{on('data, _, _')}, "
        f"%wq: f32[{d},{h},{hd}]{on('_, model, _')}, %wk: f32[{d},{h},{hd}]{on('_, model, _')}, "
        f"%wv: f32[{d},{h},{hd}]{on('_, model, _')}, %wo: f32[{h},{hd},{d}]{on('model, _, _')}, "
        f"%w1: f32[{d},{f}]{on('_, model')}, %w2: f32[{f},{d}]{on('model, _')}) "
        f"-> (out: f32[{b},{s},{d}]{on('data, _, _')}) {{")
    lines.append(block_body(b, s, d, h, f, ""))
    lines.append("  return %out\n}")
    return "\n".join(lines) + "\n"


def block_body(b, s, d, h, f, sfx):
    """The statements of one block from %x{sfx} and its weights %wq{sfx}, ... to
    %out{sfx} (value names suffixed, so that blocks can follow each other)."""
    hd = d // h
    scale = 1.0 / math.sqrt(hd)
    body = f"""  %xn = call @layer_norm(%x) : f32[{b},{s},{d}]
  %q = dot_general %xn, %wq {{lhs_contract=[2], rhs_contract=[0]}} : f32[{b},{s},{h},{hd}]
  %k = dot_general %xn, %wk {{lhs_contract=[2], rhs_contract=[0]}} : f32[{b},{s},{h},{hd}]
  %v = dot_general %xn, %wv {{lhs_contract=[2], rhs_contract=[0]}} : f32[{b},{s},{h},{hd}]
  %sc = dot_general %q, %k {{lhs_batch=[0,2], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[3]}} : f32[{b},{h},{s},{s}]
  %scale = constant {scale!r} : f32[{b},{h},{s},{s}]
  %ss = mul %sc, %scale
  %m = reduce %ss {{dims=[3], kind=max}} : f32[{b},{h},{s}]
  %mb = broadcast %m {{dims=[0,1,2]}} : f32[{b},{h},{s},{s}]
  %dd = sub %ss, %mb
  %e = exp %dd
  %z = reduce %e {{dims=[3], kind=sum}} : f32[{b},{h},{s}]
  %zb = broadcast %z {{dims=[0,1,2]}} : f32[{b},{h},{s},{s}]
  %p = div %e, %zb
  %c = dot_general %p, %v {{lhs_batch=[0,1], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[1]}} : f32[{b},{h},{s},{hd}]
  %o = dot_general %c, %wo {{lhs_contract=[1,3], rhs_contract=[0,1]}} : f32[{b},{s},{d}]
  %hh = add %x, %o
  %hn = call @layer_norm(%hh) : f32[{b},{s},{d}]
  %u = dot_general %hn, %w1 {{lhs_contract=[2], rhs_contract=[0]}} : f32[{b},{s},{f}]
  %g = tanh %u
  %y = dot_general %g, %w2 {{lhs_contract=[2], rhs_contract=[0]}} : f32[{b},{s},{d}]
  %out = add %hh, %y"""
    names = set(re.findall(r"%(\w+)", body))
    return re.sub(r"%(\w+)", lambda m: f"%{m.group(1)}{sfx}" if m.group(1) in names else m.group(0), body)


WEIGHTS = ["wq", "wk", "wv", "wo", "w1", "w2"]


def weight_shapes(d, h, f):
    hd = d // h
    return {"wq": [d, h, hd], "wk": [d, h, hd], "wv": [d, h, hd], "wo": [h, hd, d], "w1": [d, f], "w2": [f, d]}


def stack_pir(b, s, d, h, f, layers, kind):
    """`layers` blocks: one scan over stacked weights (flax nn.scan), or unrolled."""
    shapes = weight_shapes(d, h, f)
    ty = lambda sh: f"f32[{','.join(str(x) for x in sh)}]"
    act = ty([b, s, d])
    out = [pir(b, s, d, h, f, None).split("func @main")[0].rstrip() + "\n"]
    if kind == "scan":
        params = ", ".join(f"%{w}: {ty(shapes[w])}" for w in WEIGHTS)
        out.append(f"func @layer(%x: {act}, {params}) -> ({act}) {{\n{block_body(b, s, d, h, f, '')}\n  return %out\n}}\n")
        stacked = ", ".join(f"%{w}: {ty([layers] + shapes[w])}" for w in WEIGHTS)
        out.append(f"func @main(%x: {act}, {stacked}) -> (out: {act}) {{\n"
                   f"  %out = scan @layer(%x, {', '.join('%' + w for w in WEIGHTS)}) {{length={layers}, carries=1}} : {act}\n"
                   f"  return %out\n}}\n")
    else:
        params = ", ".join(f"%{w}{i}: {ty(shapes[w])}" for i in range(layers) for w in WEIGHTS)
        body = []
        for i in range(layers):
            blk = block_body(b, s, d, h, f, f"_{i}")
            # Layer i reads layer i-1's output and its own weights.
            blk = blk.replace(f"%x_{i}", "%x" if i == 0 else f"%out_{i - 1}")
            for w in WEIGHTS:
                blk = blk.replace(f"%{w}_{i}", f"%{w}{i}")
            body.append(blk)
        out.append(f"func @main(%x: {act}, {params}) -> (out: {act}) {{\n" + "\n".join(body) + f"\n  return %out_{layers - 1}\n}}\n")
    return "\n".join(out)


def flops(b, s, d, h, f):
    """Multiply-adds x 2 of the block's products."""
    return 2 * (4 * b * s * d * d + 2 * b * s * s * d + 2 * b * s * d * f)


def safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(h)))
        out.write(h)
        for blob in blobs:
            out.write(blob)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ff", type=int, default=2048)
    ap.add_argument("--mesh", default=None, help="e.g. data=2,model=2 (Megatron shardings) or data=2")
    ap.add_argument("--layers", type=int, default=1, help="a stack of this many blocks (one device)")
    ap.add_argument("--stack", choices=["scan", "unrolled"], default="scan", help="how --layers blocks are written")
    a = ap.parse_args()
    b, s, d, h, f = a.batch, a.seq, a.d_model, a.heads, a.ff
    mesh = ", ".join(a.mesh.split(",")) if a.mesh else None
    out = Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)

    def t(shape, scale):
        n = math.prod(shape)
        return (shape, [(rng.random() * 2 - 1) * scale for _ in range(n)])

    scales = {"wq": 1 / math.sqrt(d), "wk": 1 / math.sqrt(d), "wv": 1 / math.sqrt(d), "wo": 1 / math.sqrt(d),
              "w1": 1 / math.sqrt(d), "w2": 1 / math.sqrt(f)}
    shapes = weight_shapes(d, h, f)
    x = t([b, s, d], 1.0)
    if a.layers == 1:
        (out / "block.pir").write_text(pir(b, s, d, h, f, mesh))
        safetensors(out / "inputs.safetensors", {"x": x, **{w: t(shapes[w], scales[w]) for w in WEIGHTS}})
    else:
        if mesh:
            ap.error("--layers takes no --mesh")
        (out / "block.pir").write_text(stack_pir(b, s, d, h, f, a.layers, a.stack))
        per_layer = [{w: t(shapes[w], scales[w]) for w in WEIGHTS} for _ in range(a.layers)]
        if a.stack == "scan":
            tensors = {w: ([a.layers] + shapes[w], [v for layer in per_layer for v in layer[w][1]]) for w in WEIGHTS}
        else:
            tensors = {f"{w}{i}": layer[w] for i, layer in enumerate(per_layer) for w in WEIGHTS}
        safetensors(out / "inputs.safetensors", {"x": x, **tensors})
    print(json.dumps({"gflop": a.layers * flops(b, s, d, h, f) / 1e9}))


if __name__ == "__main__":
    main()
