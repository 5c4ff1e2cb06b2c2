"""Rematerialisation: `jax.checkpoint` (`remat2`) and `optimization_barrier`.

`value_and_grad` of a checkpointed function has, in its backward pass, a `remat2`
equation with `differentiated=True` whose body recomputes the forward values it needs
from the saved residuals (which ones `policy` decided when JAX partially evaluated it).
That recomputation repeats equations of the forward pass on the same values, so a
common-subexpression pass would merge the two and keep every activation alive until
the backward pass, which is what remat exists to avoid. JAX's lowering puts an XLA
`optimization_barrier` on the operands named by `prevent_cse` before the body; XLA's
CSE does not look through it.

PIR has no barrier op. The barrier becomes a `call` of a generated identity function
(`@optimization_barrier.K`, one per list of operand types): pjc simplifies each
function on its own and inlines calls only in its per-device stage, after which no
pass merges instructions, so the recomputed values stay separate instructions that
run where the backward pass needs them. In a `spmd func` (a shard_map body) the call
would have to declare how its operands vary over the mesh; there the barrier is
dropped and the recomputation may be merged (documented in docs/jax.md).
"""

from ._builder import is_empty
from ._rules import key_ok, rule


def barrier(b, vals):
    """`vals` behind a boundary that pjc's CSE does not cross (see the module doc)."""
    real = [v for v in vals if not is_empty(v)]
    if b.spmd or not real:
        return list(vals)
    types = [(v.dtype, v.shape) for v in real]
    mod = b.module
    cache = mod.__dict__.setdefault("_barriers", {})
    key = tuple(types)
    name = cache.get(key)
    if name is None:
        name = mod.body_name("optimization_barrier")
        params = [f"%{mod.fresh()}" for _ in real]
        sig = ", ".join(f"{p}: {v.type}" for p, v in zip(params, real))
        res = ", ".join(v.type for v in real)
        mod.functions.append(f"func @{name}({sig}) -> ({res}) {{\n  return {', '.join(params)}\n}}")
        cache[key] = name
    outs = iter(b.multi("call", real, types, callee=name))
    return [v if is_empty(v) else next(outs) for v in vals]


@rule("optimization_barrier")
def _optimization_barrier(b, eqn, ins):
    return barrier(b, ins)


@rule("remat", "checkpoint", "remat2")
def _remat(b, eqn, ins):
    # As JAX lowers it: only a differentiated remat (the recomputation in a backward
    # pass) gets the barrier, on the operands `prevent_cse` names (a bool, or one per
    # operand); a forward-only checkpoint is an ordinary call.
    p = eqn.params
    sub = p["jaxpr"]
    cse = p.get("prevent_cse", True)
    if p.get("differentiated", False) and cse:
        flags = [bool(cse)] * len(ins) if isinstance(cse, bool) else [bool(c) for c in cse]
        guarded = barrier(b, [v for v, f in zip(ins, flags) if f])
        it = iter(guarded)
        ins = [next(it) if f else v for v, f in zip(ins, flags)]
    return b.inline(sub, ins)


key_ok("optimization_barrier", "remat", "checkpoint", "remat2")
