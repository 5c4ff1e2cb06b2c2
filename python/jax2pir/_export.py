"""`export`: trace a JAX function and print it as a PIR module.

Naming (stable, documented in docs/jax.md): a parameter is named by its argument's
Python name followed by its path inside that argument's pytree, joined with `_` (dict
keys, attribute / namedtuple field names, sequence indices); characters outside
`[A-Za-z0-9_]` become `_`. An argument that is a plain array keeps its Python name.
`param_names` replaces the argument names (one entry per argument: a prefix string, ""
for none, or an explicit list with one name per leaf). Results are named the same way
from `result_names` (one entry per top-level result; a result that has exactly the
tree structure, shapes and dtypes of one argument and no name given takes that
argument's names, which makes it that parameter's next value in loop mode).
"""

import inspect
import re

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ._builder import Builder, UnsupportedError, Val
from ._text import key_shape, pir_type, sharding_str, type_str

try:
    from jax.sharding import AbstractMesh
except ImportError:  # pragma: no cover
    AbstractMesh = ()


class ExportError(Exception):
    """Bad arguments to export (names, shardings, mesh)."""


def _key_str(k) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def sanitize(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s or "_"


def leaf_names(prefix: str, tree):
    """Names of the leaves of `tree` under `prefix` (see the module doc)."""
    paths, _ = jax.tree_util.tree_flatten_with_path(tree)
    names = []
    for path, _leaf in paths:
        parts = [prefix] if prefix else []
        parts += [_key_str(k) for k in path]
        names.append(sanitize("_".join(parts)) if parts else "_")
    return names


def _mesh_dict(mesh):
    if mesh is None:
        return None
    if isinstance(mesh, dict):
        return {str(k): int(v) for k, v in mesh.items()}
    if hasattr(mesh, "shape") and hasattr(mesh, "axis_names"):
        return {str(a): int(mesh.shape[a]) for a in mesh.axis_names}
    raise ExportError(f"mesh must be a jax.sharding.Mesh or a dict axis -> size, not {mesh!r}")


class Module:
    def __init__(self, mesh):
        self.mesh = _mesh_dict(mesh)
        self.functions = []
        self._n = 0
        self._f = {}

    def fresh(self) -> str:
        self._n += 1
        return f"t{self._n}"

    def fresh_func(self, base) -> str:
        k = self._f.get(base, 0)
        self._f[base] = k + 1
        return f"{base}{k}"

    def body_name(self, base) -> str:
        """A new function name `base.K` for a control-flow body (K counts per base)."""
        k = self._f.get(base + ".", 0)
        self._f[base + "."] = k + 1
        return f"{base}.{k}"

    def adopt_mesh(self, mesh, eqn=None):
        d = _mesh_dict(mesh)
        if d is None or not d:
            return
        if self.mesh is None:
            self.mesh = d
        elif self.mesh != d:
            raise UnsupportedError(f"jax2pir: two different meshes: {self.mesh} and {d}")

    def spec_entries(self, spec, rank):
        """Per-dimension entries of a PartitionSpec / NamedSharding, or None (replicated)."""
        if spec is None:
            return None
        if isinstance(spec, NamedSharding):
            self.adopt_mesh(spec.mesh)
            spec = spec.spec
        if not isinstance(spec, PartitionSpec):
            if hasattr(spec, "spec"):  # another Sharding with a spec
                spec = spec.spec
            else:
                return None
        entries = list(spec)
        if len(entries) > rank:
            raise ExportError(f"sharding {spec} has more entries than the rank {rank}")
        entries += [None] * (rank - len(entries))
        out = []
        for e in entries:
            if e is PartitionSpec.UNCONSTRAINED:
                out.append("?")
                continue
            names = (e,) if isinstance(e, str) else tuple(e or ())
            for a in names:
                if self.mesh is None or a not in self.mesh:
                    raise ExportError(f"sharding {spec} names axis '{a}', which is not in the "
                                      f"mesh {self.mesh} (pass mesh=...)")
            out.append(None if not names else (names[0] if len(names) == 1 else names))
        return out

    def spec_on(self, spec, rank, eqn=None) -> str:
        entries = self.spec_entries(spec, rank)
        return sharding_str(entries if entries is not None else [None] * rank)


def _prefix_broadcast(prefix, tree, what):
    """One sharding per leaf of `tree` from `prefix` (a sharding, or a tree prefix of them)."""
    is_leaf = lambda x: x is None or isinstance(x, (PartitionSpec, NamedSharding))  # noqa: E731
    n = len(jax.tree_util.tree_leaves(tree))
    if is_leaf(prefix):
        return [prefix] * n
    try:
        from jax._src.tree_util import broadcast_prefix

        return broadcast_prefix(prefix, tree, is_leaf=is_leaf)
    except Exception as e:
        raise ExportError(f"{what} does not match the structure of the arguments: {e}") from e


def _names_for(entry, default_prefix, tree, what):
    if entry is None:
        return leaf_names(default_prefix, tree)
    if isinstance(entry, str):
        return leaf_names(entry, tree)
    names = [sanitize(str(n)) for n in entry]
    if len(names) != len(jax.tree_util.tree_leaves(tree)):
        raise ExportError(f"{what}: {len(names)} names for {len(jax.tree_util.tree_leaves(tree))} leaves")
    return names


def _arg_names(fn, n):
    try:
        sig = inspect.signature(fn)
        ps = [p.name for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        ps = []
    return [ps[i] if i < len(ps) else f"arg{i}" for i in range(n)]


def _jit_shardings(closed, n_in, n_out):
    """In/out shardings of a jax.jit-wrapped function: its single outer `jit` equation."""
    jx = closed.jaxpr
    if len(jx.eqns) != 1 or jx.eqns[0].primitive.name not in ("jit", "pjit"):
        return None, None
    e = jx.eqns[0]
    if list(e.invars) != list(jx.invars) or list(e.outvars) != list(jx.outvars):
        return None, None

    def pick(s):
        return s if isinstance(s, NamedSharding) else None

    ins = [pick(s) for s in e.params.get("in_shardings", ())] or [None] * n_in
    outs = [pick(s) for s in e.params.get("out_shardings", ())] or [None] * n_out
    return ins, outs


def export(fn, *example_args, mesh=None, in_shardings=None, out_shardings=None,
           param_names=None, result_names=None, name="main") -> str:
    """Trace `fn(*example_args)` with jax.make_jaxpr and return the PIR module text.

    mesh: a jax.sharding.Mesh or {axis: size}; taken from NamedShardings or shard_map
    when not given. in_shardings / out_shardings: one entry per argument / top-level
    result, each a PartitionSpec, NamedSharding, None (replicated) or a pytree prefix of
    them. param_names / result_names: see the module doc.
    """
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*example_args)
    jaxpr = closed.jaxpr
    mod = Module(mesh)

    # ---- parameters -----------------------------------------------------------------
    argn = _arg_names(fn, len(example_args))
    if param_names is not None and len(param_names) != len(example_args):
        raise ExportError(f"param_names has {len(param_names)} entries for {len(example_args)} arguments")
    pnames, ptrees = [], []
    for i, a in enumerate(example_args):
        entry = param_names[i] if param_names is not None else None
        leaves = jax.tree_util.tree_leaves(a)
        default = argn[i]
        if entry is None and len(leaves) == 1 and not jax.tree_util.tree_flatten_with_path(a)[0][0][0]:
            pnames.append(sanitize(default))
        else:
            pnames += _names_for(entry, default, a, f"param_names[{i}]")
        ptrees.append(a)
    if len(set(pnames)) != len(pnames):
        dup = sorted({n for n in pnames if pnames.count(n) > 1})
        raise ExportError(f"parameter names collide: {dup}; pass param_names=...")
    if len(pnames) != len(jaxpr.invars):
        raise ExportError("internal: the flattened arguments do not match the jaxpr's inputs")

    out_is_tuple = isinstance(out_shape, tuple) and not hasattr(out_shape, "_fields")
    outs_top = list(out_shape) if out_is_tuple else [out_shape]

    # ---- shardings --------------------------------------------------------------------
    jit_in, jit_out = _jit_shardings(closed, len(jaxpr.invars), len(jaxpr.outvars))
    if in_shardings is None and jit_in is not None:
        in_leaf = jit_in
    elif in_shardings is None:
        in_leaf = [None] * len(pnames)
    else:
        if len(in_shardings) != len(example_args):
            raise ExportError(f"in_shardings has {len(in_shardings)} entries for "
                              f"{len(example_args)} arguments")
        in_leaf = []
        for s, a in zip(in_shardings, example_args):
            in_leaf += _prefix_broadcast(s, a, "in_shardings")
    if out_shardings is None and jit_out is not None:
        out_leaf = jit_out
    elif out_shardings is None:
        out_leaf = None
    else:
        shard_top = list(out_shardings) if out_is_tuple else [out_shardings]
        out_leaf = []
        for s, o in zip(shard_top, outs_top):
            out_leaf += _prefix_broadcast(s, o, "out_shardings")

    # ---- results ------------------------------------------------------------------------
    if result_names is not None and len(result_names) != len(outs_top):
        raise ExportError(f"result_names has {len(result_names)} entries for {len(outs_top)} results")
    rnames = []
    k_leaf = 0
    for k, o in enumerate(outs_top):
        entry = result_names[k] if result_names is not None else None
        n_leaves = len(jax.tree_util.tree_leaves(o))
        if entry is None:
            # Only container arguments (params, optimizer state) are matched: a scalar
            # loss must not become the next value of some scalar argument.
            match = [i for i, a in enumerate(example_args)
                     if jax.tree_util.tree_flatten_with_path(a)[0]
                     and jax.tree_util.tree_flatten_with_path(a)[0][0][0]
                     and _same_structure(a, o)]
            if len(match) == 1 and jax.tree_util.tree_leaves(o) and (
                    len(n_names := _names_of_arg(pnames, example_args, match[0])) == n_leaves):
                rnames += n_names
            elif n_leaves == 1 and not jax.tree_util.tree_flatten_with_path(o)[0][0][0]:
                rnames.append(f"out{k}")
            else:
                rnames += leaf_names(f"out{k}", o)
        elif isinstance(entry, str) and n_leaves == 1 and not jax.tree_util.tree_flatten_with_path(o)[0][0][0]:
            rnames.append(sanitize(entry))
        else:
            rnames += _names_for(entry, None, o, f"result_names[{k}]")
        k_leaf += n_leaves
    if len(set(rnames)) != len(rnames):
        dup = sorted({n for n in rnames if rnames.count(n) > 1})
        raise ExportError(f"result names collide: {dup}; pass result_names=...")

    # ---- body -----------------------------------------------------------------------------
    b = Builder(mod, name)
    params = []
    sig = []
    pon = {}
    for nm, v, s in zip(pnames, jaxpr.invars, in_leaf):
        val = Val(nm, *pir_type(v.aval))
        params.append(val)
        entries = mod.spec_entries(s, len(val.shape))
        if entries is not None and "?" in entries:
            raise ExportError(f"parameter {nm}: an unconstrained (?) sharding is not allowed on a parameter")
        on = f" {sharding_str(entries)}" if entries is not None and any(e is not None for e in entries) else ""
        pon[nm] = on
        sig.append(f"%{nm}: {val.type}{on}")
    outs = b.run_jaxpr(jaxpr, closed.consts, params)
    for nm, o in zip(rnames, outs):
        if 0 in o.shape:
            raise ExportError(f"result {nm} is zero-sized ({o.type}); PIR has no zero-sized arrays")
    res = []
    ret = []
    for i, (nm, o) in enumerate(zip(rnames, outs)):
        on = ""
        if out_leaf is not None and out_leaf[i] is not None:
            entries = mod.spec_entries(out_leaf[i], len(o.shape))
            if entries is not None and any(e is not None for e in entries):
                on = f" {sharding_str(entries)}"
        elif nm in pon:  # a carried parameter keeps its sharding (spec section 5)
            on = pon[nm]
        res.append(f"{nm}: {o.type}{on}")
        ret.append("%" + o.name)
    main = (f"func @{name}({', '.join(sig)}) -> ({', '.join(res)}) {{\n"
            + "\n".join(b.body(outs)) + "\n}")
    fname = getattr(fn, "__name__", "function")
    head = [f"// Exported from JAX by jax2pir: {fname}"]
    if mod.mesh:
        head.append("mesh [" + ", ".join(f"{a}={n}" for a, n in mod.mesh.items()) + "]")
    return "\n".join(head) + "\n\n" + "\n\n".join(mod.functions + [main]) + "\n"


def _same_structure(a, o) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lo, to = jax.tree_util.tree_flatten(o)
    if ta != to or len(la) != len(lo):
        return False
    for x, y in zip(la, lo):
        if tuple(np.shape(x)) != tuple(y.shape):
            return False
        kx, ky = key_shape(getattr(x, "dtype", None)), key_shape(y.dtype)
        if kx is not None or ky is not None:
            if x.dtype != y.dtype:
                return False
        elif np.dtype(jax.numpy.result_type(x)) != np.dtype(y.dtype):
            return False
    return True


def leaf_array(leaf):
    """The numpy array a parameter file holds for an argument leaf (a typed PRNG key
    array: its u32 key data, the PIR parameter's value)."""
    if key_shape(getattr(leaf, "dtype", None)) is not None:
        return np.asarray(jax.random.key_data(leaf))
    return np.asarray(leaf)


def _names_of_arg(pnames, args, i):
    start = sum(len(jax.tree_util.tree_leaves(a)) for a in args[:i])
    return pnames[start:start + len(jax.tree_util.tree_leaves(args[i]))]


def param_dict(fn, *example_args, param_names=None):
    """{PIR parameter name: numpy array} for the leaves of example_args (export's names)."""
    argn = _arg_names(fn, len(example_args))
    out = {}
    for i, a in enumerate(example_args):
        entry = param_names[i] if param_names is not None else None
        leaves = jax.tree_util.tree_leaves(a)
        if entry is None and len(leaves) == 1 and not jax.tree_util.tree_flatten_with_path(a)[0][0][0]:
            names = [sanitize(argn[i])]
        else:
            names = _names_for(entry, argn[i], a, f"param_names[{i}]")
        for n, leaf in zip(names, leaves):
            out[n] = leaf_array(leaf)
    return out


_ = type_str
