"""Numeric fixtures for PIR version 2 (sort, top_k, scatter kinds, control flow),
imported by gen.py, whose helpers (rounding, cases, the spmd simulation) it uses.

The references are plain Python: sorting with Python's stable `sorted` under the spec's
order (NaN of any sign greater than +inf and equal to other NaNs, -0.0 equal to +0.0;
`reverse=True` keeps equal keys in their original order, as the spec's descending sort
does), scatters as explicit loops in row-major order of the index array, and loops as
Python loops with every f32 operation rounded once.
"""

import math

import numpy as np

import gen as g
from gen import NAN, INF, Prog, T, case, f32r, rnd, wrap

# Every v2 case is marked eval_only until `pjc compile` plans these ops (the executable
# test skips such cases; delete the flag as each op reaches the compiled path).
V2 = dict(eval_only=True)


# ----------------------------------------------------------------------------------
# sort and top_k
# ----------------------------------------------------------------------------------

def order_key(v):
    """The spec's sort order as a Python key: NaN above everything, zeros equal."""
    if isinstance(v, (bool, np.bool_)):
        return (0, int(v))
    if isinstance(v, (float, np.floating)):
        return (1, 0.0) if math.isnan(v) else (0, float(v))
    return (0, int(v))


def sort_ref(arrays, dim, num_keys=1, descending=False):
    """Every array reordered along dim by the first num_keys, stable."""
    moved = [np.moveaxis(np.asarray(a), dim, -1) for a in arrays]
    outs = [m.copy() for m in moved]
    n = moved[0].shape[-1]
    for line in np.ndindex(*moved[0].shape[:-1]):
        keys = [[order_key(k[line + (j,)]) for k in moved[:num_keys]] for j in range(n)]
        perm = sorted(range(n), key=lambda j: keys[j], reverse=descending)
        for m, o in zip(moved, outs):
            o[line] = m[line][perm]
    return [np.moveaxis(o, -1, dim) for o in outs]


def top_k_ref(x, k):
    x = np.asarray(x)
    n = x.shape[-1]
    vals = np.empty(x.shape[:-1] + (k,), dtype=x.dtype)
    idx = np.empty(x.shape[:-1] + (k,), dtype=object)
    for line in np.ndindex(*x.shape[:-1]):
        perm = sorted(range(n), key=lambda j: order_key(x[line + (j,)]), reverse=True)[:k]
        vals[line] = x[line][perm]
        idx[line] = perm
    return vals, idx


def float_specials_row(dt, rng, n):
    """n values of dt with NaN of both signs, ±inf, ±0 and repeated values."""
    base = [NAN, -NAN, INF, -INF, 0.0, -0.0, 1.5, 1.5, -2.0, 0.0, -0.0, 1.5]
    vals = base + list(rnd(rng.uniform(-4, 4, max(0, n - len(base))), dt))
    vals = np.array(vals[:n], dtype=np.float64)
    return vals[rng.permutation(n)]


def build_sort():
    # Floats with every special value; an iota payload shows the permutation (and so
    # stability) exactly; ascending and descending.
    for dt in g.FLOATS:
        p = Prog(f"sort_specials_{dt}")
        x = p.inp("x", dt, np.stack([float_specials_row(dt, p.rng, 12) for _ in range(3)]))
        p.stmt("%pos = iota {dim=1} : i32[3,12]")
        io = np.tile(np.arange(12, dtype=object), (3, 1))
        a, ai = sort_ref([x, io], 1)
        p.stmt(f"%a, %ai = sort %x, %pos {{dim=1}} : ({T(dt, x.shape)}, i32[3,12])")
        p.out("a", dt, a)
        p.out("ai", "i32", ai)
        d, di = sort_ref([x, io], 1, descending=True)
        p.stmt(f"%d, %di = sort %x, %pos {{dim=1, descending=true}} : ({T(dt, x.shape)}, i32[3,12])")
        p.out("d", dt, d)
        p.out("di", "i32", di)
        p.done(rtol=0.0, **V2)

    # Integers of every width (extremes, ties) sorted along dim 0 and 1, one operand.
    p = Prog("sort_ints")
    for dt in g.INTS:
        lo, hi = g.int_range(dt)
        vals = g.int_edges(dt) + g.rand_ints(g.pyrng_for("sort_ints" + dt), dt, 15)
        vals = (vals * 2)[:15]
        x = p.inp(f"x_{dt}", dt, np.array(vals, dtype=object).reshape(3, 5))
        for dim in (0, 1):
            (r,) = sort_ref([x], dim, descending=dim == 0)
            desc = ", descending=true" if dim == 0 else ""
            p.out(f"s{dim}_{dt}", dt, r, f"sort %x_{dt} {{dim={dim}{desc}}}")
    p.done(**V2)

    # pred keys (false < true) carrying a bf16 and an i8 payload, both directions.
    p = Prog("sort_pred_keys")
    k = p.rand("k", "pred", [2, 7])
    v = p.rand("v", "bf16", [2, 7])
    w = p.rand("w", "i8", [2, 7])
    for desc in (False, True):
        s = sort_ref([k, v, w], 1, descending=desc)
        nm = "d" if desc else "a"
        p.stmt(f"%{nm}k, %{nm}v, %{nm}w = sort %k, %v, %w {{dim=1{', descending=true' if desc else ''}}} : "
               f"(pred[2,7], bf16[2,7], i8[2,7])")
        p.out(f"{nm}k", "pred", s[0])
        p.out(f"{nm}v", "bf16", s[1])
        p.out(f"{nm}w", "i8", s[2])
    p.done(rtol=0.0, **V2)

    # Two keys (lexicographic, many ties in the first), a float second key with -0.0/+0.0
    # ties, a payload; a 3-D array sorted along its middle dimension.
    p = Prog("sort_two_keys")
    k0 = p.inp("k0", "i32", np.array(g.rand_ints(g.pyrng_for("sort_two_keys_k0"), "i32", 2 * 8 * 3, 0, 2),
                                     dtype=object).reshape(2, 8, 3))
    k1v = rnd(p.rng.choice([-1.0, -0.0, 0.0, 0.5, NAN, 2.0], size=(2, 8, 3)), "f32")
    k1 = p.inp("k1", "f32", k1v)
    pay = p.rand("pay", "f16", [2, 8, 3])
    for desc in (False, True):
        s = sort_ref([k0, k1, pay], 1, num_keys=2, descending=desc)
        nm = "d" if desc else "a"
        attrs = "dim=1, num_keys=2" + (", descending=true" if desc else "")
        p.stmt(f"%{nm}0, %{nm}1, %{nm}p = sort %k0, %k1, %pay {{{attrs}}} : (i32[2,8,3], f32[2,8,3], f16[2,8,3])")
        p.out(f"{nm}0", "i32", s[0])
        p.out(f"{nm}1", "f32", s[1])
        p.out(f"{nm}p", "f16", s[2])
    # num_keys=1 with the same operands: the float key only travels along.
    s = sort_ref([k0, k1], 1, num_keys=1)
    p.stmt("%o0, %o1 = sort %k0, %k1 {dim=1} : (i32[2,8,3], f32[2,8,3])")
    p.out("o0", "i32", s[0])
    p.out("o1", "f32", s[1])
    p.done(rtol=0.0, **V2)

    # argsort as JAX writes it: sort of (keys, iota) along the last dim, u16 keys.
    p = Prog("sort_argsort_u16")
    x = p.inp("x", "u16", np.array(g.rand_ints(g.pyrng_for("argsort"), "u16", 24, 0, 9), dtype=object).reshape(4, 6))
    p.stmt("%i = iota {dim=1} : i32[4,6]")
    io = np.tile(np.arange(6, dtype=object), (4, 1))
    s = sort_ref([x, io], 1)
    p.stmt("%sx, %si = sort %x, %i {dim=1} : (u16[4,6], i32[4,6])")
    p.out("sx", "u16", s[0])
    p.out("si", "i32", s[1])
    p.done(**V2)


def build_top_k():
    for dt in ["f32", "bf16", "f64"]:
        p = Prog(f"top_k_{dt}")
        x = p.inp("x", dt, np.stack([float_specials_row(dt, p.rng, 12) for _ in range(4)]))
        for k in (1, 5, 12):
            v, i = top_k_ref(x, k)
            p.stmt(f"%v{k}, %i{k} = top_k %x {{k={k}}} : ({T(dt, v.shape)}, i32[{4},{k}])")
            p.out(f"v{k}", dt, v)
            p.out(f"i{k}", "i32", i)
        p.done(rtol=0.0, **V2)

    # Integer ties (lower index first), a 3-D operand, unsigned and signed extremes.
    p = Prog("top_k_ints")
    x = p.inp("x", "i8", np.array(g.rand_ints(g.pyrng_for("topk_i8"), "i8", 2 * 3 * 8, -3, 3),
                                 dtype=object).reshape(2, 3, 8))
    v, i = top_k_ref(x, 4)
    p.stmt("%v, %i = top_k %x {k=4} : (i8[2,3,4], i32[2,3,4])")
    p.out("v", "i8", v)
    p.out("i", "i32", i)
    u = p.inp("u", "u64", np.array([[0, 2**64 - 1, 5, 2**63, 2**64 - 1, 0]], dtype=object))
    uv, ui = top_k_ref(u, 3)
    p.stmt("%uv, %ui = top_k %u {k=3} : (u64[1,3], i32[1,3])")
    p.out("uv", "u64", uv)
    p.out("ui", "i32", ui)
    q = p.inp("q", "pred", np.array([False, True, False, True, True]))
    qv, qi = top_k_ref(q, 2)
    p.stmt("%qv, %qi = top_k %q {k=2} : (pred[2], i32[2])")
    p.out("qv", "pred", qv)
    p.out("qi", "i32", qi)
    p.done(**V2)


# ----------------------------------------------------------------------------------
# scatter with a combining kind
# ----------------------------------------------------------------------------------

def combine(kind, dt):
    """kind's binary operation on reference values of dt (floats in f64, exact ints)."""
    if dt == "pred":
        return {"add": lambda a, b: a or b, "max": lambda a, b: a or b,
                "mul": lambda a, b: a and b, "min": lambda a, b: a and b, "set": lambda a, b: b}[kind]
    if g.is_float(dt):
        return {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
                "max": g.fmax2, "min": g.fmin2, "set": lambda a, b: b}[kind]
    return {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
            "max": max, "min": min, "set": lambda a, b: b}[kind]


def scatter_ref(base, idx, upd, axis, kind, dt):
    """base with the updates combined in, in row-major order of the index array (so the
    last duplicate wins for set); out-of-range indices dropped; floats combined in f64
    and rounded once at the end, integers wrapped once."""
    base, idx, upd = np.asarray(base), np.asarray(idx), np.asarray(upd)
    out = np.array(base.tolist(), dtype=object)
    op = combine(kind, dt)
    n = base.shape[axis]
    for outer in np.ndindex(*base.shape[:axis]):
        for ip in np.ndindex(*idx.shape):
            j = int(idx[ip])
            if not 0 <= j < n:
                continue
            for inner in np.ndindex(*base.shape[axis + 1:]):
                dst = outer + (j,) + inner
                out[dst] = op(out[dst], upd[outer + ip + inner])
    if g.is_int(dt):
        return np.vectorize(lambda v: wrap(v, dt), otypes=[object])(out)
    if dt == "pred":
        return out.astype(np.bool_)
    return rnd(out.astype(np.float64), dt)


def build_scatter():
    for kind in ["set", "add", "mul", "max", "min"]:
        p = Prog(f"scatter_{kind}")
        arrays = {}

        def inp(n, dt, a):
            arrays[n] = p.inp(n, dt, a)

        def out(nm, b, i, u, axis, dt):
            p.out(nm, dt, scatter_ref(arrays[b], arrays[i], arrays[u], axis, kind, dt),
                  f"scatter %{b}, %{i}, %{u} {{axis={axis}, kind={kind}}}")

        # f32 along axis 0: index 1 three times, 0 twice, 3 twice, -1 and 5 dropped;
        # NaN, and both zeros meeting at row 3 (whose base holds zeros too).
        b = rnd(p.rng.uniform(0.5, 2, (5, 3)), "f32")
        b[3] = [-0.0, 0.0, -1.0]
        inp("b", "f32", b)
        inp("i", "i32", np.array([1, 0, 1, -1, 5, 1, 0, 3, 3], dtype=object))
        u = rnd(p.rng.uniform(0.5, 2, (9, 3)), "f32")
        u[0, 0], u[2, 1], u[1, 0] = NAN, -0.0, -0.0
        u[7], u[8] = [0.0, -0.0, -0.0], [-0.0, -0.0, -2.0]
        inp("u", "f32", u)
        out("r", "b", "i", "u", 0, "f32")
        # bf16 along axis 1 with a 2-D u32 index array (4000000000 dropped).
        inp("bb", "bf16", rnd(p.rng.uniform(0.5, 2, (2, 4)), "bf16"))
        inp("ib", "u32", np.array([[3, 3], [4000000000, 0], [3, 2]], dtype=object))
        inp("ub", "bf16", rnd(p.rng.uniform(0.5, 2, (2, 3, 2)), "bf16"))
        out("rb", "bb", "ib", "ub", 1, "bf16")
        # Integers: i32 extremes (wrapping add/mul) with i64 indices; u8 with u8 indices.
        inp("bi", "i32", np.array([2**31 - 1, -2**31, 7, -3], dtype=object))
        inp("ii", "i64", np.array([0, 0, 1, 3, 3, 9, -9], dtype=object))
        inp("ui", "i32", np.array([5, -2, 3, 2**30, 3, 1, 1], dtype=object))
        out("ri", "bi", "ii", "ui", 0, "i32")
        inp("b8", "u8", np.array([[200, 3], [0, 255]], dtype=object))
        inp("i8x", "u8", np.array([1, 1, 0], dtype=object))
        inp("u8x", "u8", np.array([[100, 7, 2], [9, 255, 1]], dtype=object))
        out("r8", "b8", "i8x", "u8x", 1, "u8")
        # pred: set, add/max = or, mul/min = and.
        inp("bq", "pred", np.array([True, False, True, False]))
        inp("iq", "i32", np.array([0, 1, 1, 2, 4], dtype=object))
        inp("uq", "pred", np.array([False, True, False, True, True]))
        out("rq", "bq", "iq", "uq", 0, "pred")
        # set/max/min move or pick values: exact; add/mul round once, within the spec's
        # reassociation tolerance (and a sum of zeros may have either sign).
        exact = kind in ("set", "max", "min")
        p.done(rtol=0.0 if exact else None, anyzero=not exact, **V2)


# ----------------------------------------------------------------------------------
# control flow
# ----------------------------------------------------------------------------------

COUNT_COND = """
func @below(%i: i32[], %n: i32[], %x: f32[4]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

func @grow(%i: i32[], %n: i32[], %x: f32[4]) -> (i32[], i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %k = constant 1.5 : f32[4]
  %y = mul %x, %k
  %c = constant 0.25 : f32[4]
  %z = add %y, %c
  return %j, %n, %z
}
"""


def grow_ref(n, x):
    i = 0
    while i < n:
        x = f32r(f32r(x * 1.5) + 0.25)
        i += 1
    return i, x


def build_while():
    # Zero trips (n = 0 and a negative n), one trip, several; the counter and the
    # value both come back.
    p = Prog("while_trips")
    x = p.rand("x", "f32", [4])
    for tag, n in [("zero", 0), ("neg", -3), ("one", 1), ("six", 6)]:
        p.inp(f"n_{tag}", "i32", np.array(n, dtype=object))
        i, y = grow_ref(n, x)
        p.stmt(f"%z_{tag} = constant 0 : i32[]")
        p.stmt(f"%i_{tag}, %m_{tag}, %y_{tag} = while @below, @grow(%z_{tag}, %n_{tag}, %x)")
        p.out(f"i_{tag}", "i32", np.array(i, dtype=object))
        p.out(f"y_{tag}", "f32", y)
    p.done(rtol=0.0, extra=COUNT_COND, **V2)

    # A data-dependent trip count: double until the largest element passes 1000; the
    # condition reduces, the body takes a pred and an integer along.
    name = "while_until"
    extra = """
func @small(%x: f32[5], %k: u8[], %q: pred[5]) -> (pred[]) {
  %m = reduce %x {dims=[0], kind=max}
  %lim = constant 1000.0 : f32[]
  %p = compare %m, %lim {dir=lt}
  return %p
}

func @double(%x: f32[5], %k: u8[], %q: pred[5]) -> (f32[5], u8[], pred[5]) {
  %y = add %x, %x
  %one = constant 1 : u8[]
  %j = add %k, %one
  %nq = not %q
  return %y, %j, %nq
}
"""
    p = Prog(name)
    x = p.inp("x", "f32", rnd(p.rng.uniform(1, 3, 5), "f32"))
    q = p.rand("q", "pred", [5])
    p.stmt("%k0 = constant 250 : u8[]")
    p.stmt("%y, %k, %nq = while @small, @double(%x, %k0, %q)")
    y, k, qq = x.copy(), 250, q.copy()
    while y.max() < 1000.0:
        y, k, qq = f32r(y + y), wrap(k + 1, "u8"), ~qq
    p.out("y", "f32", y)
    p.out("k", "u8", np.array(k, dtype=object))
    p.out("nq", "pred", qq)
    p.done(rtol=0.0, **V2, extra=extra)


SCAN_STEP = """
func @step(%h: f32[3], %x: f32[3]) -> (f32[3], f32[3], f32[3]) {
  %k = constant 0.5 : f32[3]
  %hk = mul %h, %k
  %h2 = add %hk, %x
  %xx = mul %x, %x
  %y = sub %h2, %xx
  return %h2, %y, %h
}
"""


def scan_step_ref(h, x):
    h2 = f32r(f32r(h * 0.5) + x)
    return h2, f32r(h2 - f32r(x * x)), h


def scan_ref(h, xs, reverse):
    ys, hs = [None] * len(xs), [None] * len(xs)
    for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
        h, ys[i], hs[i] = scan_step_ref(h, xs[i])
    return h, np.stack(ys), np.stack(hs)


def build_scan():
    p = Prog("scan_forward_reverse")
    h = p.rand("h", "f32", [3])
    xs = p.rand("xs", "f32", [5, 3])
    for rev in (False, True):
        nm = "r" if rev else "f"
        hf, ys, hs = scan_ref(h, xs, rev)
        attrs = "length=5, carries=1" + (", reverse=true" if rev else "")
        p.stmt(f"%{nm}h, %{nm}y, %{nm}s = scan @step(%h, %xs) {{{attrs}}}")
        p.out(f"{nm}h", "f32", hf)
        p.out(f"{nm}y", "f32", ys)
        p.out(f"{nm}s", "f32", hs)
    p.done(rtol=0.0, extra=SCAN_STEP, **V2)

    # Length only: no scanned operand, two carries, an integer output stacked.
    extra = """
func @count(%c: i32[2], %s: f64[]) -> (i32[2], f64[], i32[2], f64[]) {
  %three = constant 3 : i32[2]
  %one = constant 1 : i32[2]
  %c3 = mul %c, %three
  %c2 = add %c3, %one
  %h = constant 0.5 : f64[]
  %s2 = mul %s, %h
  return %c2, %s2, %c, %s
}
"""
    p = Prog("scan_length_only")
    c = p.inp("c", "i32", np.array([1, -2**30], dtype=object))
    s = p.inp("s", "f64", np.array(3.0))
    p.stmt("%cf, %sf, %cs, %ss = scan @count(%c, %s) {length=4, carries=2}")
    cs, ss, cc, sc = [], [], list(c), float(s)
    for _ in range(4):
        cs.append(list(cc))
        ss.append(sc)
        cc = [wrap(v * 3 + 1, "i32") for v in cc]
        sc = sc * 0.5
    p.out("cf", "i32", np.array(cc, dtype=object))
    p.out("sf", "f64", np.array(sc))
    p.out("cs", "i32", np.array(cs, dtype=object))
    p.out("ss", "f64", np.array(ss))
    p.done(rtol=0.0, extra=extra, **V2)

    # No carries: two scanned operands, two outputs; and reverse with no carries.
    extra = """
func @sq(%x: f32[2], %k: i16[]) -> (f32[2], i16[]) {
  %xx = mul %x, %x
  %one = constant 1 : i16[]
  %k1 = add %k, %one
  return %xx, %k1
}
"""
    p = Prog("scan_no_carries")
    xs = p.rand("xs", "f32", [3, 2])
    ks = p.inp("ks", "i16", np.array([7, 32767, -4], dtype=object))
    p.stmt("%sq, %k1 = scan @sq(%xs, %ks) {length=3, carries=0}")
    p.stmt("%rsq, %rk1 = scan @sq(%xs, %ks) {length=3, carries=0, reverse=true}")
    for nm in ("", "r"):
        p.out(f"{nm}sq", "f32", f32r(xs * xs))
        p.out(f"{nm}k1", "i16", np.array([wrap(int(k) + 1, "i16") for k in ks], dtype=object))
    p.done(rtol=0.0, extra=extra, **V2)

    # A scan nested in a while: each trip scans xs from the carry; the stacked outputs
    # ride along as a carry; the scan's step itself contains a one-branch switch.
    extra = """
func @keep(%x: f32[3]) -> (f32[3]) {
  return %x
}

func @inner(%h: f32[3], %x: f32[3], %t: i32[]) -> (f32[3], f32[3]) {
  %ht = switch %t, @keep(%h)
  %s = add %ht, %x
  return %s, %s
}

func @inner_step(%h: f32[3], %x: f32[3]) -> (f32[3], f32[3]) {
  %t = constant 5 : i32[]
  %s, %y = call @inner(%h, %x, %t) : (f32[3], f32[3])
  return %s, %y
}

func @trips(%i: i32[], %h: f32[3], %xs: f32[4,3], %ys: f32[4,3]) -> (pred[]) {
  %three = constant 3 : i32[]
  %p = compare %i, %three {dir=lt}
  return %p
}

func @outer(%i: i32[], %h: f32[3], %xs: f32[4,3], %ys: f32[4,3]) -> (i32[], f32[3], f32[4,3], f32[4,3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %h2, %ys2 = scan @inner_step(%h, %xs) {length=4, carries=1}
  return %j, %h2, %xs, %ys2
}
"""
    p = Prog("scan_nested_in_while")
    h = p.rand("h", "f32", [3])
    xs = p.rand("xs", "f32", [4, 3])
    ys0 = p.rand("ys0", "f32", [4, 3])
    p.stmt("%zero = constant 0 : i32[]")
    p.stmt("%n, %hf, %xs2, %ys = while @trips, @outer(%zero, %h, %xs, %ys0)")
    hh, ys = h.copy(), ys0
    for _ in range(3):
        rows = []
        for x in xs:
            hh = f32r(hh + x)
            rows.append(hh)
        ys = np.stack(rows)
    p.out("n", "i32", np.array(3, dtype=object))
    p.out("hf", "f32", hh)
    p.out("ys", "f32", ys)
    p.done(rtol=0.0, extra=extra, **V2)


BRANCHES = """
func @inc(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %one = constant 1.0 : f32[3]
  %y = add %x, %one
  return %y, %k
}

func @dbl(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = add %x, %x
  %two = constant 2 : i32[]
  %k2 = mul %k, %two
  return %y, %k2
}

func @flip(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = neg %x
  %k2 = neg %k
  return %y, %k2
}
"""


def branch_ref(b, x, k):
    return [(f32r(x + 1.0), k), (f32r(x + x), wrap(2 * k, "i32")), (-x, wrap(-k, "i32"))][b]


def build_switch():
    # The index clamped numerically in its own dtype: negative -> 0, past the end ->
    # last, u32 4000000000 -> last (not a negative i32), u8, i64 extremes.
    p = Prog("switch_clamp")
    x = p.rand("x", "f32", [3])
    k = p.inp("k", "i32", np.array(21, dtype=object))
    for tag, dt, v in [("neg", "i32", -7), ("one", "i32", 1), ("big", "i32", 100), ("u32", "u32", 4000000000),
                       ("u8", "u8", 2), ("zero", "u8", 0), ("imin", "i64", -2**63), ("imax", "i64", 2**63 - 1),
                       ("u64", "u64", 2**64 - 1)]:
        p.inp(f"i_{tag}", dt, np.array(v, dtype=object))
        b = min(max(v, 0), 2)
        y, kk = branch_ref(b, x, int(k))
        p.stmt(f"%y_{tag}, %k_{tag} = switch %i_{tag}, @inc, @dbl, @flip(%x, %k)")
        p.out(f"y_{tag}", "f32", y)
        p.out(f"k_{tag}", "i32", np.array(kk, dtype=object))
    # One branch: every index picks it.
    p.inp("i_one_branch", "i32", np.array(-5, dtype=object))
    p.stmt("%y_only, %k_only = switch %i_one_branch, @dbl(%x, %k)")
    y, kk = branch_ref(1, x, int(k))
    p.out("y_only", "f32", y)
    p.out("k_only", "i32", np.array(kk, dtype=object))
    p.done(rtol=0.0, extra=BRANCHES, **V2)

    # A switch inside a scan: the scanned i32 indices choose the branch per step.
    extra = BRANCHES + """
func @pick(%h: f32[3], %k: i32[], %i: i32[]) -> (f32[3], i32[], f32[3]) {
  %h2, %k2 = switch %i, @inc, @dbl, @flip(%h, %k)
  return %h2, %k2, %h2
}
"""
    p = Prog("switch_in_scan")
    h = p.rand("h", "f32", [3])
    k = p.inp("k", "i32", np.array(3, dtype=object))
    idx = p.inp("idx", "i32", np.array([-1, 0, 1, 2, 5, 1, 2], dtype=object))
    p.stmt("%hf, %kf, %hs = scan @pick(%h, %k, %idx) {length=7, carries=2}")
    hh, kk, rows = h.copy(), int(k), []
    for i in idx:
        hh, kk = branch_ref(min(max(int(i), 0), 2), hh, kk)
        rows.append(hh)
    p.out("hf", "f32", hh)
    p.out("kf", "i32", np.array(kk, dtype=object))
    p.out("hs", "f32", np.stack(rows))
    p.done(rtol=0.0, extra=extra, **V2)


# ----------------------------------------------------------------------------------
# control flow in spmd funcs: collectives inside bodies, in lockstep
# ----------------------------------------------------------------------------------

SPMD_WHILE = """
mesh [{mesh}]

// Grow every device's shard by the sum over {sum_axes} until the largest
// element anywhere passes 100: the condition's all_reduce makes the predicate
// the same on every device, the body's all_reduce needs every device's x.
spmd func @small(%i: i32[], %x: f32[{local}]) -> (pred[]) {{
  %m = reduce %x {{dims=[0, 1], kind=max}}
  %g = all_reduce %m {{axes=[{all_axes}], kind=max}}
  %lim = constant 100.0 : f32[]
  %p = compare %g, %lim {{dir=lt}}
  return %p
}}

spmd func @grow(%i: i32[], %x: f32[{local}]) -> (i32[], f32[{local}]) {{
  %one = constant 1 : i32[]
  %j = add %i, %one
  %s = all_reduce %x {{axes=[{sum_axes}], kind=sum}}
  %k = constant 0.5 : f32[{local}]
  %sk = mul %s, %k
  %y = add %x, %sk
  return %j, %y
}}

spmd func @main(%x: f32[{local}] on [{spec}]) -> (n: i32[], y: f32[{local}] on [{spec}]) {{
  %zero = constant 0 : i32[]
  %n, %y = while @small, @grow(%zero, %x)
  return %n, %y
}}
"""


def spmd_while_ref(mesh, x_glob, spec, sum_axes):
    x = {d: g.shard(mesh, x_glob, spec, d).astype(np.float64) for d in mesh.devices}
    n = 0
    while max(float(v.max()) for v in x.values()) < 100.0:
        # all_reduce sum: the group's shards added in group order in f64, rounded once.
        s = {d: f32r(sum(x[m] for m in mesh.group(d, sum_axes))) for d in mesh.devices}
        x = {d: f32r(x[d] + f32r(s[d] * 0.5)) for d in mesh.devices}
        n += 1
    return n, g.unshard(mesh, x, spec)


def build_spmd_control():
    for name, axes, spec_text, sum_axes, local in [
        ("spmd_while_allreduce_2", [("data", 2)], "data, _", ["data"], [2, 3]),
        ("spmd_while_allreduce_4", [("data", 4)], "data, _", ["data"], [2, 3]),
        ("spmd_while_allreduce_2x2", [("data", 2), ("model", 2)], "data, model", ["model"], [2, 3]),
    ]:
        mesh = g.Mesh(axes)
        spec = g.spec_of(spec_text, 2)
        gshape = [local[d] * int(np.prod([mesh.size[a] for a in spec[d]] or [1])) for d in range(2)]
        rng = g.rng_for(name)
        X = rnd(rng.uniform(0.5, 3, gshape), "f32")
        n, Y = spmd_while_ref(mesh, X, spec, sum_axes)
        prog = SPMD_WHILE.format(
            mesh=", ".join(f"{a}={s}" for a, s in axes), local=",".join(map(str, local)), spec=spec_text,
            all_axes=", ".join(a for a, _ in axes), sum_axes=", ".join(sum_axes))
        assert n >= 2, f"{name}: {n} trips"
        case(name, prog, [("x", "f32", X)], [("n", "i32", np.array(n, dtype=object)), ("y", "f32", Y)], **V2)

    # A scan and a switch in a spmd func: the step all_gathers the scanned slice, the
    # switch's index is a replicated parameter, its branches reduce over the mesh.
    name = "spmd_scan_switch"
    mesh = g.Mesh([("data", 2)])
    rng = g.rng_for(name)
    XS = rnd(rng.uniform(-2, 2, (3, 4)), "f32")  # global [3, 4], split on dim 1
    H = rnd(rng.uniform(-2, 2, (2,)), "f32")     # global [2], split
    prog = """
mesh [data=2]

spmd func @step(%h: f32[1], %x: f32[2]) -> (f32[1], f32[4]) {
  %g = all_gather %x {axes=[data], dim=0} : f32[4]
  %s = reduce %g {dims=[0], kind=sum}
  %sb = broadcast %s : f32[1]
  %h2 = add %h, %sb
  return %h2, %g
}

spmd func @total(%h: f32[1]) -> (f32[1]) {
  %t = all_reduce %h {axes=[data], kind=sum}
  return %t
}

spmd func @largest(%h: f32[1]) -> (f32[1]) {
  %t = all_reduce %h {axes=[data], kind=max}
  return %t
}

spmd func @main(%h: f32[1] on [data], %xs: f32[3,2] on [_, data], %i: i32[], %j: u32[]) -> (hf: f32[1] on [data], gs: f32[3,4], t: f32[1] on [data], m: f32[1] on [data]) {
  %hf, %gs = scan @step(%h, %xs) {length=3, carries=1, reverse=true}
  %t = switch %i, @total, @largest(%hf)
  %m = switch %j, @total, @largest(%hf)
  return %hf, %gs, %t, %m
}
"""
    spec_h, spec_x = g.spec_of("data", 1), g.spec_of("_, data", 2)
    h = {d: g.shard(mesh, H, spec_h, d) for d in mesh.devices}
    xs = {d: g.shard(mesh, XS, spec_x, d) for d in mesh.devices}
    gs = {}
    for d in mesh.devices:
        hh, rows = h[d].astype(np.float64), [None] * 3
        for i in reversed(range(3)):
            row = np.concatenate([xs[m][i] for m in mesh.group(d, ["data"])])
            hh = f32r(hh + f32r(sum(float(v) for v in row)))
            rows[i] = row
        h[d], gs[d] = hh, np.stack(rows)
    total = {d: f32r(sum(h[m] for m in mesh.group(d, ["data"]))) for d in mesh.devices}
    largest = {d: np.max(np.stack([h[m] for m in mesh.group(d, ["data"])]), axis=0) for d in mesh.devices}
    outs = [("hf", "f32", g.unshard(mesh, h, spec_h)), ("gs", "f32", g.unshard(mesh, gs, g.spec_of(None, 2))),
            ("t", "f32", g.unshard(mesh, total, spec_h)), ("m", "f32", g.unshard(mesh, largest, spec_h))]
    ins = [("h", "f32", H), ("xs", "f32", XS), ("i", "i32", np.array(-3, dtype=object)),
           ("j", "u32", np.array(4000000000, dtype=object))]
    case(name, prog, ins, outs, **V2)


def build_v2():
    build_sort()
    build_top_k()
    build_scatter()
    build_while()
    build_scan()
    build_switch()
    build_spmd_control()
