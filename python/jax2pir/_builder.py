"""One PIR function under construction, and the jaxpr interpreter that fills it.

`Builder` keeps the statements of one `func` or `spmd func`, the type of every value it
defined, and small helpers (`op`, `const`, `bcast_to`) that the primitive rules in
`_rules.py` use. `run_jaxpr` walks a jaxpr's equations in order, looks each primitive up
in the rule table and records which PIR value each jaxpr variable became; nested calls
(`jit`, `closed_call`, `custom_jvp_call`, ...) are inlined by calling it recursively.
"""

import re

import numpy as np
from jax.extend import core as jcore

from ._text import (array_lit, attrs_str, key_shape, np_dtype, pir_dtype, pir_type, scalar_lit,
                    sharding_str, type_str)


_NAME = re.compile(r"%([A-Za-z0-9_.]+)")


class UnsupportedError(Exception):
    """A primitive (or a form of one) that has no PIR translation."""


# The equations being inlined (jit, custom_jvp_call, ...) around the current one: an
# equation traced inside a library function may have no user frame of its own, and then
# the nearest enclosing call's line is the user's.
_ENCLOSING = []


def _summary(eqn) -> str:
    try:
        from jax._src import source_info_util

        return source_info_util.summarize(eqn.source_info).strip()
    except Exception:  # pragma: no cover - private API moved
        return ""


def source_of(eqn) -> str:
    """'file.py:42 (fn)' for the user's line that produced an equation."""
    for e in [eqn] + _ENCLOSING[::-1]:
        s = _summary(e)
        if s:
            return s
    return "an unknown source line"


def fail(eqn, message: str):
    raise UnsupportedError(
        f"jax2pir: cannot export primitive '{eqn.primitive.name}' at {source_of(eqn)}: {message}")


class Val:
    """A PIR value: its name (without %) and type."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)

    @property
    def type(self):
        return type_str(self.dtype, self.shape)

    def __repr__(self):
        return f"%{self.name}: {self.type}"


_BITS = {"f64": "u64", "f32": "u32", "f16": "u16", "bf16": "u16"}


def _odd_nans(arr, dtype) -> bool:
    """Whether a float array holds a NaN other than the positive quiet one (`nan`)."""
    if dtype not in _BITS:
        return False
    nans = arr[np.isnan(arr.astype(np.float64))]
    if nans.size == 0:
        return False
    u = np_dtype(_BITS[dtype])
    return bool(np.any(nans.view(u) != np.array(np.nan, arr.dtype).view(u)))


def empty(dtype, shape) -> Val:
    """A zero-sized value: PIR has none, so it is never printed; the rules of `concatenate`
    and `pad` drop it, and any other op that meets one is an error."""
    return Val("<zero-sized>", dtype, shape)


def is_empty(v) -> bool:
    return 0 in v.shape


class Builder:
    def __init__(self, module, name, spmd=False):
        self.module = module
        self.name = name
        self.spmd = spmd
        self.lines = []
        self._const_cache = {}
        self._scalar_of = {}   # name of a constant -> (literal text, dtype)
        self._bcast_of = {}    # name of a broadcast result -> (operand Val, dims)
        self.last_eqn = None

    # ---- value creation -------------------------------------------------------------
    def fresh(self) -> str:
        return self.module.fresh()

    def op(self, opname, operands, dtype, shape, attrs=None, sharding=None) -> Val:
        if 0 in tuple(shape):  # PIR has no zero-sized arrays: such a value emits nothing
            return empty(dtype, shape)
        if any(is_empty(v) for v in operands):
            raise UnsupportedError(f"jax2pir: a zero-sized operand of '{opname}' with a "
                                   f"non-empty result (PIR has no zero-sized arrays)")
        r = Val(self.fresh(), dtype, shape)
        args = ", ".join("%" + v.name for v in operands)
        sp = " " if args else ""
        on = f" {sharding_str(sharding)}" if sharding is not None else ""
        self.lines.append(f"  %{r.name} = {opname}{sp}{args}{attrs_str(attrs)} : {r.type}{on}")
        return r

    def multi(self, opname, operands, types, attrs=None, callee=None):
        """A statement with several results (a `call`)."""
        outs = [Val(self.fresh(), d, s) for d, s in types]
        args = ", ".join("%" + v.name for v in operands)
        tys = ", ".join(v.type for v in outs)
        lhs = ", ".join("%" + v.name for v in outs)
        head = f"{opname} @{callee}({args})" if callee else f"{opname} {args}"
        self.lines.append(f"  {lhs} = {head}{attrs_str(attrs)} : ({tys})")
        return outs

    def control(self, head, operands, types, attrs=None):
        """A control-flow statement (spec section 7.1): `head` names the op and its bodies
        (`scan @step`, `switch %i, @b0, @b1`), the operands follow in parentheses; one
        result prints `: T`, several `: (T, U)`."""
        outs = [Val(self.fresh(), d, s) for d, s in types]
        if not outs:
            return []
        args = ", ".join("%" + v.name for v in operands)
        tys = outs[0].type if len(outs) == 1 else "(" + ", ".join(v.type for v in outs) + ")"
        lhs = ", ".join("%" + v.name for v in outs)
        self.lines.append(f"  {lhs} = {head}({args}){attrs_str(attrs)} : {tys}")
        return outs

    def const(self, value, dtype, shape=()) -> Val:
        """A constant filled with one scalar value (cached per function)."""
        if 0 in tuple(shape):
            return empty(dtype, shape)
        lit = scalar_lit(value, dtype)
        key = (lit, dtype, tuple(shape))
        if key not in self._const_cache:
            r = Val(self.fresh(), dtype, shape)
            self.lines.append(f"  %{r.name} = constant {lit} : {r.type}")
            self._const_cache[key] = r
            self._scalar_of[r.name] = (value, dtype)
        return self._const_cache[key]

    def const_array(self, arr) -> Val:
        arr = np.asarray(arr)
        dtype = pir_dtype(arr.dtype)
        flat = arr.reshape(-1)
        if arr.size == 0:
            return empty(dtype, arr.shape)
        if _odd_nans(arr, dtype):
            # PIR's `nan` literal is the positive quiet NaN: a constant holding other NaNs
            # (a sign bit, a payload) is written as its bits and bitcast.
            u = _BITS[dtype]
            bits = self.const_array(arr.view(np_dtype(u)))
            return self.op("bitcast_convert", [bits], dtype, arr.shape)
        if arr.ndim == 0 or bool(np.all(flat == flat[0])):
            return self.const(flat[0].item() if dtype != "bf16" else float(flat[0]), dtype, arr.shape)
        r = Val(self.fresh(), dtype, arr.shape)
        self.lines.append(f"  %{r.name} = constant {array_lit(arr, dtype)} : {r.type}")
        return r

    def bcast_to(self, v: Val, shape) -> Val:
        """A scalar (or same-shape) value at `shape`: jaxprs let literals stand for arrays."""
        shape = tuple(shape)
        if v.shape == shape:
            return v
        if v.name in self._scalar_of:  # a filled constant: fill the new shape instead
            value, dtype = self._scalar_of[v.name]
            return self.const(value, dtype, shape)
        if v.shape == ():
            return self.broadcast(v, shape, [])
        if len(v.shape) == len(shape) and all(a in (1, b) for a, b in zip(v.shape, shape)):
            # Newer jaxprs stretch size-1 dimensions implicitly in elementwise ops.
            if v.name in self._bcast_of:  # compose with the broadcast that made v
                src, dims = self._bcast_of[v.name]
                return self.broadcast(src, shape, dims)
            return self.broadcast(v, shape, list(range(len(shape))))
        raise UnsupportedError(f"jax2pir: internal: cannot broadcast {v.type} to {shape}")

    def broadcast(self, v: Val, shape, dims) -> Val:
        dims = [int(d) for d in dims]
        if v.shape == tuple(shape) and dims == list(range(len(shape))):
            return v
        if v.name in self._scalar_of and v.shape == ():
            value, dtype = self._scalar_of[v.name]
            return self.const(value, dtype, shape)
        r = self.op("broadcast", [v], v.dtype, shape, {"dims": dims} if dims else None)
        self._bcast_of[r.name] = (v, dims)
        return r

    def convert(self, v: Val, dtype) -> Val:
        if v.dtype == dtype:
            return v
        return self.op("convert", [v], dtype, v.shape)

    def reshape(self, v: Val, shape) -> Val:
        shape = tuple(int(d) for d in shape)
        if v.shape == shape:
            return v
        return self.op("reshape", [v], v.dtype, shape)

    def transpose(self, v: Val, perm) -> Val:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        return self.op("transpose", [v], v.dtype, [v.shape[p] for p in perm], {"perm": perm})

    def body(self, outs):
        """The statements that the returned values need (dead ones dropped), and the return."""
        live = {o.name for o in outs}
        kept = []
        for line in reversed(self.lines):
            lhs, rhs = line.split(" = ", 1)
            defs = _NAME.findall(lhs)
            if any(d in live for d in defs):
                kept.append(line)
                live.update(_NAME.findall(rhs.split(" : ")[0] if " : " in rhs else rhs))
        kept.reverse()
        return kept + ["  return " + ", ".join("%" + o.name for o in outs)]

    # ---- the jaxpr walk ------------------------------------------------------------
    def read(self, env, atom) -> Val:
        if isinstance(atom, jcore.Literal):
            aval = atom.aval
            dtype = pir_dtype(aval.dtype)
            val = np.asarray(atom.val)
            if val.ndim == 0 and not _odd_nans(val.astype(np.dtype(aval.dtype)), dtype):
                return self.const(val.item() if dtype != "bf16" else float(val), dtype, ())
            return self.const_array(val.astype(np.dtype(aval.dtype)))
        return env[atom]

    def run_jaxpr(self, jaxpr, consts, args):
        """Emit `jaxpr` with its invars bound to `args` (Vals); returns the outvars' Vals."""
        from ._rules import KEY_OK, RULES

        env = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[v] = self.const_array(c)
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            ins = [self.read(env, x) for x in eqn.invars]
            rule = RULES.get(eqn.primitive.name)
            if rule is None:
                fail(eqn, "no PIR translation for this primitive "
                          "(see the supported-primitive table in docs/jax.md)")
            if eqn.primitive.name not in KEY_OK and any(
                    key_shape(getattr(getattr(v, "aval", None), "dtype", None)) is not None
                    for v in list(eqn.invars) + list(eqn.outvars)):
                fail(eqn, "typed PRNG key arrays (key<...>) are not supported through this "
                          "primitive (see docs/jax.md for the ones that are)")
            self.last_eqn = eqn
            out_types = [pir_type(v.aval) for v in eqn.outvars]
            if out_types and all(0 in shp for _, shp in out_types):
                # Zero-sized results (an associative_scan's empty slices): nothing to emit.
                for v, (d, shp) in zip(eqn.outvars, out_types):
                    if not isinstance(v, jcore.DropVar):
                        env[v] = empty(d, shp)
                continue
            try:
                outs = rule(self, eqn, ins)
            except UnsupportedError:
                raise
            except Exception as e:  # a rule that met a form it does not handle
                raise UnsupportedError(
                    f"jax2pir: cannot export primitive '{eqn.primitive.name}' at "
                    f"{source_of(eqn)}: {type(e).__name__}: {e}") from e
            if isinstance(outs, Val):
                outs = [outs]
            for v, o in zip(eqn.outvars, outs):
                if not isinstance(v, jcore.DropVar):
                    want = pir_type(v.aval)
                    if (o.dtype, o.shape) != want:
                        raise UnsupportedError(
                            f"jax2pir: internal: '{eqn.primitive.name}' at {source_of(eqn)} gave "
                            f"{o.type}, JAX says {type_str(*want)}")
                    env[v] = o
        return [self.read(env, v) for v in jaxpr.outvars]

    def inline(self, closed_or_open, args):
        """Inline a ClosedJaxpr or an open Jaxpr (no consts)."""
        _ENCLOSING.append(self.last_eqn)
        try:
            if hasattr(closed_or_open, "jaxpr") and hasattr(closed_or_open, "consts"):
                return self.run_jaxpr(closed_or_open.jaxpr, closed_or_open.consts, args)
            return self.run_jaxpr(closed_or_open, [], args)
        finally:
            _ENCLOSING.pop()
