"""`sort` and `top_k`: JAX's sorting primitives as PIR's `sort` and `top_k`.

JAX's comparator for `lax.sort` orders -0.0 equal to +0.0 and every NaN after +inf,
equal to each other — PIR's order (spec section 11) — so a sort exports as one `sort`.
jnp's descending sorts and `argsort(descending=True)` are written by JAX as `rev`
around an ascending sort (which keeps ties in JAX's order); those `rev`s are ordinary
equations. `is_stable=False` exports as PIR's stable sort, one of the orders an unstable
sort may give. `argsort`, `jax.random.permutation`, `shuffle` and `choice(replace=False)`
are sorts of (keys, iota) in the jaxpr, so they need nothing more.
"""

from ._builder import fail
from ._rules import out_type, rule


@rule("sort")
def _sort(b, eqn, ins):
    dim = int(eqn.params["dimension"])
    num_keys = int(eqn.params["num_keys"])
    if not 1 <= num_keys <= len(ins):
        fail(eqn, f"num_keys={num_keys} with {len(ins)} operands")
    attrs = {"dim": dim}
    if num_keys != 1:
        attrs["num_keys"] = num_keys
    types = [out_type(eqn, i) for i in range(len(eqn.outvars))]
    if len(types) == 1:
        return b.op("sort", ins, *types[0], attrs)
    return b.multi("sort", ins, types, attrs)


@rule("top_k")
def _top_k(b, eqn, ins):
    # PIR's top_k works on the last dimension: another `axis` is moved there and back.
    x = ins[0]
    rank = len(x.shape)
    axis = int(eqn.params.get("axis", rank - 1)) % rank
    k = int(eqn.params["k"])
    vd, idt = out_type(eqn, 0)[0], out_type(eqn, 1)[0]
    perm = [d for d in range(rank) if d != axis] + [axis]
    xt = b.transpose(x, perm)
    shape = xt.shape[:-1] + (k,)
    vals, idx = b.multi("top_k", [xt], [(vd, shape), ("i32", shape)], {"k": k})
    inv = [perm.index(d) for d in range(rank)]
    return [b.transpose(vals, inv), b.convert(b.transpose(idx, inv), idt)]
