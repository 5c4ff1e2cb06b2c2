#!/usr/bin/env python3
"""A GPT-style block stack in PIR, unannotated but for the mesh, for timing `pjc explain --auto-shard`.

    python3 benches/autoshard/gen_gpt.py > /tmp/gpt24.pir            # 24-layer forward
    python3 benches/autoshard/gen_gpt.py --train > /tmp/gpt24t.pir   # its SGD training step
    python3 benches/autoshard/gen_gpt.py --layers 2 --d 64 ...       # other sizes

Written directly as PIR text (no JAX needed; benches/compile/gen_stack.py exports a
similar stack through jax2pir). x is [batch, seq, d]; each of `layers` pre-norm blocks is

    x = x + attention(layer_norm(x))        causal, `heads` heads of d/heads
    x = x + gelu(layer_norm(x) @ w1 + b1) @ w2 + b2      hidden = 4 d, GELU's tanh form

with weights of its own (layer norms with gain and bias; wq, wk, wv [d, heads, d/heads],
wo [heads, d/heads, d]), then a final layer norm. No parameter or result carries a
sharding: the mesh [data=2, model=2] is all auto-sharding is given. --train makes the
program one SGD step: loss = mean(y * target) over the stack's output y, `grad` of it
with respect to every weight, and the updated weights returned under the parameters'
names (carried state), as examples/jax_gpt/gpt.pir is.
"""

import argparse


def ty(*shape):
    return "f32[" + ",".join(str(s) for s in shape) + "]"


def layer_norm_func(b, t, d):
    x3, x2 = ty(b, t, d), ty(b, t)
    return f"""func @layer_norm(%x: {x3}, %g: f32[{d}], %b: f32[{d}]) -> ({x3}) {{
  %s = reduce %x {{dims=[2], kind=sum}} : {x2}
  %n = constant {float(d)} : {x2}
  %mean = div %s, %n
  %mb = broadcast %mean {{dims=[0,1]}} : {x3}
  %xc = sub %x, %mb
  %sq = mul %xc, %xc
  %vs = reduce %sq {{dims=[2], kind=sum}} : {x2}
  %var = div %vs, %n
  %eps = constant 1e-05 : {x2}
  %ve = add %var, %eps
  %inv = rsqrt %ve
  %ib = broadcast %inv {{dims=[0,1]}} : {x3}
  %xn = mul %xc, %ib
  %gb = broadcast %g {{dims=[2]}} : {x3}
  %bb = broadcast %b {{dims=[2]}} : {x3}
  %xg = mul %xn, %gb
  %y = add %xg, %bb
  return %y
}}
"""


def layer_params(i, d, heads, hidden):
    hd = d // heads
    return [
        (f"l{i}_ln1_g", ty(d)), (f"l{i}_ln1_b", ty(d)),
        (f"l{i}_wq", ty(d, heads, hd)), (f"l{i}_wk", ty(d, heads, hd)), (f"l{i}_wv", ty(d, heads, hd)),
        (f"l{i}_wo", ty(heads, hd, d)),
        (f"l{i}_ln2_g", ty(d)), (f"l{i}_ln2_b", ty(d)),
        (f"l{i}_w1", ty(d, hidden)), (f"l{i}_b1", ty(hidden)),
        (f"l{i}_w2", ty(hidden, d)), (f"l{i}_b2", ty(d)),
    ]


def block(i, x, b, t, d, heads, hidden):
    """The statements of layer i on value %x; returns (lines, output value)."""
    hd = d // heads
    x3, q4, s4, s3, c4, h3 = ty(b, t, d), ty(b, t, heads, hd), ty(b, heads, t, t), ty(b, heads, t), ty(b, heads, t, hd), ty(b, t, hidden)
    p = f"%l{i}_"
    L = [
        f"  {p}xn = call @layer_norm({x}, {p}ln1_g, {p}ln1_b) : {x3}",
        f"  {p}q = dot_general {p}xn, {p}wq {{lhs_contract=[2], rhs_contract=[0]}} : {q4}",
        f"  {p}k = dot_general {p}xn, {p}wk {{lhs_contract=[2], rhs_contract=[0]}} : {q4}",
        f"  {p}v = dot_general {p}xn, {p}wv {{lhs_contract=[2], rhs_contract=[0]}} : {q4}",
        f"  {p}s = dot_general {p}q, {p}k {{lhs_batch=[0,2], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[3]}} : {s4}",
        f"  {p}scale = constant {1.0 / hd ** 0.5!r} : {s4}",
        f"  {p}ss = mul {p}s, {p}scale",
        f"  {p}masked = select %causal, {p}ss, %neg_big",
        f"  {p}m = reduce {p}masked {{dims=[3], kind=max}} : {s3}",
        f"  {p}mb = broadcast {p}m {{dims=[0,1,2]}} : {s4}",
        f"  {p}dd = sub {p}masked, {p}mb",
        f"  {p}e = exp {p}dd",
        f"  {p}z = reduce {p}e {{dims=[3], kind=sum}} : {s3}",
        f"  {p}zb = broadcast {p}z {{dims=[0,1,2]}} : {s4}",
        f"  {p}pr = div {p}e, {p}zb",
        f"  {p}c = dot_general {p}pr, {p}v {{lhs_batch=[0,1], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[1]}} : {c4}",
        f"  {p}o = dot_general {p}c, {p}wo {{lhs_contract=[1,3], rhs_contract=[0,1]}} : {x3}",
        f"  {p}h = add {x}, {p}o",
        f"  {p}hn = call @layer_norm({p}h, {p}ln2_g, {p}ln2_b) : {x3}",
        f"  {p}u0 = dot_general {p}hn, {p}w1 {{lhs_contract=[2], rhs_contract=[0]}} : {h3}",
        f"  {p}b1b = broadcast {p}b1 {{dims=[2]}} : {h3}",
        f"  {p}u = add {p}u0, {p}b1b",
        # gelu(u) = 0.5 u (1 + tanh(0.7978845608 (u + 0.044715 u^3)))
        f"  {p}u2 = mul {p}u, {p}u",
        f"  {p}u3 = mul {p}u2, {p}u",
        f"  {p}cu3 = mul {p}u3, %gelu_c",
        f"  {p}in = add {p}u, {p}cu3",
        f"  {p}sin = mul {p}in, %gelu_s",
        f"  {p}th = tanh {p}sin",
        f"  {p}th1 = add {p}th, %one_h",
        f"  {p}hu = mul {p}u, %half_h",
        f"  {p}g = mul {p}hu, {p}th1",
        f"  {p}y0 = dot_general {p}g, {p}w2 {{lhs_contract=[2], rhs_contract=[0]}} : {x3}",
        f"  {p}b2b = broadcast {p}b2 {{dims=[2]}} : {x3}",
        f"  {p}y = add {p}y0, {p}b2b",
        f"  {p}out = add {p}h, {p}y",
    ]
    return L, f"{p}out"


def stack_body(layers, b, t, d, heads, hidden):
    s4, h3 = ty(b, heads, t, t), ty(b, t, hidden)
    L = [
        f"  %row = iota {{dim=0}} : i32[{t},{t}]",
        f"  %col = iota {{dim=1}} : i32[{t},{t}]",
        f"  %tri = compare %row, %col {{dir=ge}} : pred[{t},{t}]",
        f"  %causal = broadcast %tri {{dims=[2,3]}} : pred[{b},{heads},{t},{t}]",
        f"  %neg_big = constant -1e+09 : {s4}",
        f"  %gelu_c = constant 0.044715 : {h3}",
        f"  %gelu_s = constant 0.7978845608 : {h3}",
        f"  %one_h = constant 1.0 : {h3}",
        f"  %half_h = constant 0.5 : {h3}",
    ]
    x = "%x"
    for i in range(layers):
        lines, x = block(i, x, b, t, d, heads, hidden)
        L += lines
    L.append(f"  %y = call @layer_norm({x}, %lnf_g, %lnf_b) : {ty(b, t, d)}")
    return L


def program(layers, batch, seq, d, heads, train):
    hidden = 4 * d
    assert d % heads == 0
    params = [p for i in range(layers) for p in layer_params(i, d, heads, hidden)]
    params += [("lnf_g", ty(d)), ("lnf_b", ty(d))]
    x3 = ty(batch, seq, d)
    out = [f"// {layers}-layer GPT-style stack: batch {batch}, seq {seq}, d_model {d}, {heads} heads,"
           f" hidden {hidden}{', SGD step' if train else ''}.",
           "// Generated by benches/autoshard/gen_gpt.py; no annotations but the mesh.",
           "mesh [data=2, model=2]", "", layer_norm_func(batch, seq, d)]
    body = stack_body(layers, batch, seq, d, heads, hidden)
    plist = ", ".join(f"%{n}: {t}" for n, t in params)
    if not train:
        out.append(f"func @main(%x: {x3}, {plist}) -> (y: {x3}) {{")
        out += body
        out += ["  return %y", "}", ""]
        return "\n".join(out)
    n = batch * seq * d
    out.append(f"func @loss({plist}, %x: {x3}, %target: {x3}) -> (f32[]) {{")
    out += body
    out += ["  %yt = mul %y, %target",
            "  %sum = reduce %yt {dims=[0,1,2], kind=sum} : f32[]",
            f"  %count = constant {float(n)} : f32[]",
            "  %l = div %sum, %count",
            "  return %l", "}", ""]
    names = ", ".join(f"%{nm}" for nm, _ in params)
    grads = ", ".join(f"%d_{nm}" for nm, _ in params)
    gtys = ", ".join(t for _, t in params)
    wrt = ",".join(str(i) for i in range(len(params)))
    res = ", ".join(f"{nm}: {t}" for nm, t in params)
    out.append(f"func @main(%x: {x3}, %target: {x3}, {plist}) -> (loss: f32[], {res}) {{")
    out.append(f"  %loss, {grads} = grad @loss({names}, %x, %target) {{wrt=[{wrt}]}} : (f32[], {gtys})")
    for nm, t in params:
        out += [f"  %lr_{nm} = constant 0.01 : {t}",
                f"  %u_{nm} = mul %d_{nm}, %lr_{nm}",
                f"  %n_{nm} = sub %{nm}, %u_{nm}"]
    out.append("  return %loss, " + ", ".join(f"%n_{nm}" for nm, _ in params))
    out += ["}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--train", action="store_true", help="an SGD training step instead of the forward pass")
    a = ap.parse_args()
    print(program(a.layers, a.batch, a.seq, a.d, a.heads, a.train), end="")


if __name__ == "__main__":
    main()
