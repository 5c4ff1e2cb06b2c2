"""`gather` and `scatter`: XLA's general forms rewritten into PIR's axis-only ops.

PIR's `gather %t, %i {axis=a}` is numpy `take`; XLA's gather is far more general. The
forms that models produce — an embedding lookup (`emb[ids]`, `jnp.take`), and
`take_along_axis` / `x[jnp.arange(n), labels]` (index dimensions paired with batching
dimensions) — all pick single elements along some dimensions and take the others
whole. For those, the picked dimensions (batching ones first) are moved to the front
and flattened into one, the indices become one flat index (batching positions from
`iota`), and one PIR `gather`/`scatter_add` on axis 0 does the work; a transpose puts
the result dimensions where JAX has them. A scatter (`x.at[i].set(v)`, `.add`, `.mul`,
`.min`, `.max`; kinds set/add/mul/min/max) with one indexed dimension and no batching
needs no flattening: it is one PIR `scatter {axis=a}` with the updates transposed into
PIR's layout. Windowed slices along an indexed dimension (slice size > 1 there) and
scatters with their own update function (`.apply`) are not supported.

Out-of-range indices follow the JAX mode: `clip`/`promise_in_bounds` clamp each index
into its dimension; `fill` gathers give the fill value (NaN for floats) and
`fill`/`drop` scatters drop the update, as XLA does.
"""

import numpy as np

from ._builder import fail
from ._rules import out_type, rule


def _mode_name(mode) -> str:
    return str(getattr(mode, "name", mode)).upper()


def _flat_index(b, eqn, idx, op_shape, batch_op, batch_idx, picked, clamp, want_valid):
    """The flat index into the (batch..., picked...) block of the operand.

    idx: the JAX index array, shape I + (len(picked),). Returns (flat Val of shape I,
    valid pred Val of shape I or None).
    """
    ishape = idx.shape[:-1]
    if idx.shape[-1] != len(picked):
        fail(eqn, "the index vector dimension must be the last dimension of the indices")
    dt = idx.dtype if idx.dtype in ("i32", "i64") else "i32"
    sizes = [op_shape[d] for d in batch_op] + [op_shape[d] for d in picked]
    strides = [int(np.prod(sizes[k + 1:], dtype=np.int64)) for k in range(len(sizes))]
    comps, valid = [], None
    for m, d in enumerate(batch_idx):
        comps.append(b.op("iota", [], dt, ishape, {"dim": int(d)}))
    for j, d in enumerate(picked):
        c = b.op("slice", [idx], idx.dtype, ishape + (1,),
                 {"start": [0] * len(ishape) + [j], "limit": list(ishape) + [j + 1]})
        c = b.convert(b.reshape(c, ishape), dt)
        hi = b.const(op_shape[d] - 1, dt, ishape)
        lo = b.const(0, dt, ishape)
        if want_valid:
            ok = b.op("and", [b.op("compare", [c, lo], "pred", ishape, {"dir": "ge"}),
                              b.op("compare", [c, hi], "pred", ishape, {"dir": "le"})],
                      "pred", ishape)
            valid = ok if valid is None else b.op("and", [valid, ok], "pred", ishape)
        if clamp:
            c = b.op("clamp", [b.const(0, dt, ()), c, b.const(op_shape[d] - 1, dt, ())], dt, ishape)
        comps.append(c)
    flat = None
    for c, s in zip(comps, strides):
        term = c if s == 1 else b.op("mul", [c, b.const(s, dt, ishape)], dt, ishape)
        flat = term if flat is None else b.op("add", [flat, term], dt, ishape)
    return flat, valid


def _flatten_operand(b, x, batch_op, picked):
    rest = [d for d in range(len(x.shape)) if d not in batch_op and d not in picked]
    perm = list(batch_op) + list(picked) + rest
    t = b.transpose(x, perm)
    n = int(np.prod([x.shape[d] for d in list(batch_op) + list(picked)], dtype=np.int64))
    return b.reshape(t, (n,) + tuple(x.shape[d] for d in rest)), perm, rest, n


@rule("gather")
def _gather(b, eqn, ins):
    dtype, shape = out_type(eqn)
    x, idx = ins
    dn = eqn.params["dimension_numbers"]
    sizes = [int(s) for s in eqn.params["slice_sizes"]]
    picked = [int(d) for d in dn.start_index_map]
    batch_op = [int(d) for d in getattr(dn, "operand_batching_dims", ())]
    batch_idx = [int(d) for d in getattr(dn, "start_indices_batching_dims", ())]
    if sorted(int(d) for d in dn.collapsed_slice_dims) != sorted(picked):
        fail(eqn, "a gather whose collapsed dimensions are not exactly its indexed ones "
                  "(a windowed gather) has no PIR form")
    for d in range(len(x.shape)):
        want = 1 if (d in picked or d in batch_op) else x.shape[d]
        if sizes[d] != want:
            fail(eqn, f"slice size {sizes[d]} on operand dimension {d} (PIR's gather takes "
                      f"single elements along indexed dimensions and whole other dimensions)")
    mode = _mode_name(eqn.params.get("mode"))
    fill = "FILL" in mode
    simple = not batch_op and len(picked) == 1
    table, _, rest, _ = _flatten_operand(b, x, batch_op, picked)
    flat, valid = _flat_index(b, eqn, idx, x.shape, batch_op, batch_idx, picked,
                              clamp=not simple, want_valid=fill)
    ishape = flat.shape
    g = b.op("gather", [table, flat], x.dtype, ishape + tuple(x.shape[d] for d in rest),
             {"axis": 0})
    offset_dims = [int(d) for d in dn.offset_dims]
    rank = len(shape)
    batch_pos = [p for p in range(rank) if p not in offset_dims]
    perm = [0] * rank
    for i, p in enumerate(batch_pos):
        perm[p] = i
    for j, p in enumerate(offset_dims):
        perm[p] = len(ishape) + j
    r = b.transpose(g, perm)
    if fill:
        fv = eqn.params.get("fill_value")
        if fv is None:
            if dtype in ("f64", "f32", "f16", "bf16"):
                fv = float("nan")
            elif dtype == "pred":
                fv = True
            else:
                info = np.iinfo(np.dtype({"i": "int", "u": "uint"}[dtype[0]] + dtype[1:]))
                fv = info.min if dtype[0] == "i" else info.max
        vb = b.op("broadcast", [valid], "pred", shape, {"dims": batch_pos} if batch_pos else None)
        r = b.op("select", [vb, r, b.const(fv, dtype, shape)], dtype, shape)
    return r


# JAX's scatter primitives and the PIR kind each one combines with (`add` prints as
# PIR's `scatter_add`, the same op).
_SCATTER_KIND = {"scatter": "set", "scatter-add": "add", "scatter_add": "add",
                 "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}


@rule(*_SCATTER_KIND)
def _scatter(b, eqn, ins):
    kind = _SCATTER_KIND[eqn.primitive.name]
    if kind == "set" and eqn.params.get("update_jaxpr") is not None:
        fail(eqn, "a scatter with its own update function (x.at[i].apply(f)) has no PIR form; "
                  "PIR's scatter kinds are set, add, mul, min and max")
    x, idx, upd = ins
    dn = eqn.params["dimension_numbers"]
    picked = [int(d) for d in dn.scatter_dims_to_operand_dims]
    batch_op = [int(d) for d in getattr(dn, "operand_batching_dims", ())]
    batch_idx = [int(d) for d in getattr(dn, "scatter_indices_batching_dims", ())]
    if sorted(int(d) for d in dn.inserted_window_dims) != sorted(picked):
        fail(eqn, "a scatter whose inserted window dimensions are not exactly its indexed ones "
                  "(an update of a window, such as x.at[i, 1:3].set(v)) has no PIR form: PIR's "
                  "scatter updates single positions along one axis")
    window_dims = [int(d) for d in dn.update_window_dims]
    rest = [d for d in range(len(x.shape)) if d not in batch_op and d not in picked]
    if [upd.shape[d] for d in window_dims] != [x.shape[d] for d in rest]:
        fail(eqn, "scatter windows that do not cover whole operand dimensions have no PIR form")
    mode = _mode_name(eqn.params.get("mode"))
    simple = not batch_op and len(picked) == 1
    clip = "CLIP" in mode
    check = not simple and "PROMISE" not in mode and not clip
    scatter_dims = [d for d in range(len(upd.shape)) if d not in window_dims]
    attrs = {"axis": 0} if kind == "add" else {"axis": 0, "kind": kind}
    opname = "scatter_add" if kind == "add" else "scatter"
    if simple:
        # One indexed dimension a: PIR's scatter along axis a, with the updates laid out
        # as base.shape[:a] + index shape + base.shape[a+1:] (out-of-range indices are
        # dropped by PIR, as FILL_OR_DROP wants).
        a = picked[0]
        flat, _ = _flat_index(b, eqn, idx, x.shape, [], [], picked, clamp=clip, want_valid=False)
        u = b.transpose(upd, window_dims[:a] + scatter_dims + window_dims[a:])
        attrs["axis"] = a
        return b.op(opname, [x, flat, u], x.dtype, x.shape, attrs)
    base, perm, rest, n = _flatten_operand(b, x, batch_op, picked)
    flat, valid = _flat_index(b, eqn, idx, x.shape, batch_op, batch_idx, picked,
                              clamp=clip, want_valid=check)
    ishape = flat.shape
    if valid is not None:  # out-of-range updates go to index n, which PIR drops
        flat = b.op("select", [valid, flat, b.const(n, flat.dtype, ishape)], flat.dtype, ishape)
    u = b.transpose(upd, scatter_dims + window_dims)
    s = b.op(opname, [base, flat, u], x.dtype, base.shape, attrs)
    s = b.reshape(s, [x.shape[d] for d in perm])
    inv = [perm.index(d) for d in range(len(perm))]
    return b.transpose(s, inv)
