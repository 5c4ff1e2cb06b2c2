"""`shard_map` bodies as `spmd func`s, and the collectives inside them.

A `shard_map` equation becomes a `spmd func @shard_mapK` (per-device types from the
body's jaxpr, `on [...]` from in_specs/out_specs) and a `call` of it from the
enclosing `func` with global types: the spec's shard_map model. psum/pmax/pmin,
all_gather, psum_scatter, ppermute (a uniform shift), all_to_all and axis_index become
PIR's collectives.
"""

from ._builder import Builder, Val, fail
from ._rules import RULES, out_type, rule
from ._text import pir_type


def _axes(eqn, names):
    if isinstance(names, (str,)):
        names = (names,)
    names = tuple(names)
    for a in names:
        if not isinstance(a, str):
            fail(eqn, f"axis {a!r} is not a mesh axis name (collectives over vmap axes are "
                      f"not supported)")
    return list(names)


def _need_spmd(b, eqn):
    if not b.spmd:
        fail(eqn, "a collective outside shard_map (PIR allows collectives only in a spmd func)")
    if eqn.params.get("axis_index_groups") is not None:
        fail(eqn, "axis_index_groups is not supported")


def _group_size(b, eqn, axes):
    size = 1
    for a in axes:
        if a not in b.module.mesh:
            fail(eqn, f"axis '{a}' is not in the mesh {dict(b.module.mesh)}")
        size *= b.module.mesh[a]
    return size


@rule("shard_map")
def _shard_map(b, eqn, ins):
    if b.spmd:
        fail(eqn, "a shard_map nested in another shard_map")
    p = eqn.params
    mod = b.module
    mod.adopt_mesh(p["mesh"], eqn)
    manual = p.get("manual_axes") or p.get("newly_manual_axes")
    auto = p.get("auto") or frozenset()
    if auto or (manual is not None and set(manual) != set(mod.mesh)):
        fail(eqn, "a shard_map that is manual over only some mesh axes (PIR's spmd func is "
                  "manual over the whole mesh)")
    body = p["jaxpr"]
    if hasattr(body, "consts"):
        consts, body = body.consts, body.jaxpr
    else:
        consts = []
    in_specs, out_specs = p["in_specs"], p["out_specs"]
    name = mod.fresh_func("shard_map")
    sub = Builder(mod, name, spmd=True)
    params = []
    sig = []
    for i, (v, spec) in enumerate(zip(body.invars, in_specs)):
        val = Val(mod.fresh(), *pir_type(v.aval))
        params.append(val)
        sig.append(f"%{val.name}: {val.type} {mod.spec_on(spec, len(val.shape), eqn)}")
    outs = sub.run_jaxpr(body, consts, params)
    res = []
    for o, spec in zip(outs, out_specs):
        res.append(f"{o.type} {mod.spec_on(spec, len(o.shape), eqn)}")
    body_lines = sub.body(outs)
    mod.functions.append(
        f"spmd func @{name}({', '.join(sig)}) -> ({', '.join(res)}) {{\n"
        + "\n".join(body_lines) + "\n}")
    types = [out_type(eqn, i) for i in range(len(eqn.outvars))]
    return b.multi("call", ins, types, callee=name)


_KIND = {"psum": "sum", "pmax": "max", "pmin": "min", "psum_invariant": "sum",
         "psum2": "sum"}


def _psum(b, eqn, ins):
    _need_spmd(b, eqn)
    axes = _axes(eqn, eqn.params["axes"])
    kind = _KIND[eqn.primitive.name]
    outs = []
    for i, x in enumerate(ins):
        dtype, shape = out_type(eqn, i)
        outs.append(b.op("all_reduce", [x], dtype, shape, {"axes": axes, "kind": kind}))
    return outs


for _n in _KIND:
    RULES[_n] = _psum


@rule("all_gather")
def _all_gather(b, eqn, ins):
    _need_spmd(b, eqn)
    p = eqn.params
    axes = _axes(eqn, p["axis_name"])
    dim = int(p["all_gather_dimension"])
    dtype, shape = out_type(eqn)
    x = ins[0]
    if not p["tiled"]:  # a new dimension: give x a size-1 one and gather along it
        x = b.reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])
    return b.op("all_gather", [x], dtype, shape, {"axes": axes, "dim": dim})


@rule("reduce_scatter")
def _reduce_scatter(b, eqn, ins):
    _need_spmd(b, eqn)
    p = eqn.params
    axes = _axes(eqn, p["axis_name"])
    dim = int(p["scatter_dimension"])
    dtype, shape = out_type(eqn)
    x = ins[0]
    if p["tiled"]:
        return b.op("reduce_scatter", [x], dtype, shape, {"axes": axes, "dim": dim, "kind": "sum"})
    tmp = list(x.shape)
    tmp[dim] = 1
    r = b.op("reduce_scatter", [x], dtype, tmp, {"axes": axes, "dim": dim, "kind": "sum"})
    return b.reshape(r, shape)


@rule("ppermute")
def _ppermute(b, eqn, ins):
    _need_spmd(b, eqn)
    axes = _axes(eqn, eqn.params["axis_name"])
    n = _group_size(b, eqn, axes)
    perm = [(int(s), int(d)) for s, d in eqn.params["perm"]]
    shifts = {(d - s) % n for s, d in perm}
    if len(perm) != n or len(shifts) != 1 or sorted(s for s, _ in perm) != list(range(n)):
        fail(eqn, f"ppermute with perm {perm}: only a uniform cyclic shift of all {n} "
                  f"devices maps to PIR's collective_permute")
    dtype, shape = out_type(eqn)
    return b.op("collective_permute", ins, dtype, shape, {"axes": axes, "shift": shifts.pop()})


@rule("all_to_all")
def _all_to_all(b, eqn, ins):
    _need_spmd(b, eqn)
    p = eqn.params
    axes = _axes(eqn, p["axis_name"])
    n = _group_size(b, eqn, axes)
    split, concat = int(p["split_axis"]), int(p["concat_axis"])
    dtype, shape = out_type(eqn)
    x = ins[0]
    tiled = list(x.shape)
    tiled[split] //= n
    tiled[concat] *= n
    if tuple(tiled) != shape:
        fail(eqn, f"all_to_all from {x.shape} to {shape} is not the tiled form PIR has")
    return b.op("all_to_all", [x], dtype, shape,
                {"axes": axes, "split_dim": split, "concat_dim": concat})


@rule("axis_index")
def _axis_index(b, eqn, ins):
    if not b.spmd:
        fail(eqn, "axis_index outside shard_map")
    axes = _axes(eqn, eqn.params["axis_name"])
    acc = None
    for a in axes:  # the linear position over several axes, the first one major
        _group_size(b, eqn, [a])
        i = b.op("axis_index", [], "i32", (), {"axis": a})
        if acc is None:
            acc = i
        else:
            acc = b.op("add", [b.op("mul", [acc, b.const(b.module.mesh[a], "i32")], "i32", ()), i],
                       "i32", ())
    dtype, _ = out_type(eqn)
    return b.convert(acc, dtype)
