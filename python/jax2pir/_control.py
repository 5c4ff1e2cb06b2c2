"""Control flow: JAX's `scan`, `while` and `cond` as PIR's `scan`, `while` and `switch`.

Each body jaxpr becomes a function of the module (spec section 7.1): a `func` when the
loop is in a `func`, a `spmd func` inside a `shard_map` body, named after the traced
Python function (`@scan_step.0`, `@while_body.0`, `@cond_branch.1`, `@fori_loop_body.0`).
PIR bodies see only their parameters, so the values a jaxpr closes over (its `consts`, the leading operands
counted by `num_consts` / `cond_nconsts` / `body_nconsts`) ride as extra carries in
front of the loop's own ones, which the body returns unchanged; each distinct value is
carried once. Constants of a ClosedJaxpr are emitted inside the body (they need no
operand). `unroll` is a scheduling hint and is ignored.

`lax.fori_loop` with static bounds is a `scan` in the jaxpr, with dynamic bounds a
`while`; `lax.cond(p, f, g)` is `cond` on `convert_element_type(p) : i32` with branches
(g, f), and `lax.switch` converts and clamps its index first: those steps are ordinary
equations, exported as ordinary ops before the `switch`.
"""

import re

from ._builder import _ENCLOSING, Builder, Val, fail
from ._rules import KEY_OK, out_type, rule
from ._text import type_str

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _base(closed, kind, unnamed):
    """`kind` followed by the traced function's name (`scan_step`, `cond_relu`), or
    `unnamed` for lambdas and JAX's own helpers (`scan_body`, `cond_branch`); a
    `fori_loop`'s body is `fori_loop_...`."""
    info = getattr(closed.jaxpr, "debug_info", None)
    if getattr(info, "traced_for", None) == "fori_loop":
        kind, unnamed = "fori_loop", "fori_loop_body"
    src = getattr(info, "func_src_info", None) or ""
    name = src.split(" ", 1)[0]
    if _IDENT.fullmatch(name) and not name.startswith("_"):
        return f"{kind}_{name}"
    return unnamed


def function(b, eqn, base, types, emit):
    """Add a body function to the module and return its name.

    types: the (dtype, shape) of each parameter; emit(sub, params) fills the new
    Builder `sub` and returns the Vals to return. The function is a `spmd func` exactly
    when the caller is one (its types are then local ones)."""
    mod = b.module
    name = mod.body_name(base)
    sub = Builder(mod, name, spmd=b.spmd)
    params = [Val(mod.fresh(), d, s) for d, s in types]
    _ENCLOSING.append(eqn)  # errors inside the body name the user's line of the loop
    try:
        outs = emit(sub, params)
    finally:
        _ENCLOSING.pop()
    kind = "spmd func" if b.spmd else "func"
    sig = ", ".join(f"%{p.name}: {p.type}" for p in params)
    res = ", ".join(o.type for o in outs)
    mod.functions.append(f"{kind} @{name}({sig}) -> ({res}) {{\n" + "\n".join(sub.body(outs)) + "\n}")
    return name


class _Carries:
    """The carried values of a PIR loop: the distinct closed-over values (each once),
    then the loop's own carries; a stand-in `i32[]` when the loop would have no operand
    at all (PIR's `while` and `scan` need one). A closed-over constant filled with one
    value (JAX hoists `jnp.where(m, x, 0.0)`'s zeros out of the body) is not carried:
    the body makes its own.

    groups: one list of Vals per jaxpr that closes over values (a while loop's cond and
    body); `own`: the JAX loop's carries; `scanned`: its other operands (a scan's xs)."""

    def __init__(self, b, groups, own, scanned=()):
        self.extra, self.where, self.filled = [], [], {}
        for g in groups:
            idx = []
            for v in g:
                if v.name in b._scalar_of:
                    self.filled[v.name] = b._scalar_of[v.name]
                    idx.append(v)
                    continue
                k = next((i for i, e in enumerate(self.extra) if e.name == v.name), None)
                if k is None:
                    k = len(self.extra)
                    self.extra.append(v)
                idx.append(k)
            self.where.append(idx)
        self.own = list(own)
        self.dummy = [] if (self.extra or own or scanned) else [b.const(0, "i32")]

    @property
    def operands(self):
        return self.extra + self.dummy + self.own

    @property
    def skip(self):
        """How many leading results and body parameters are not the JAX loop's."""
        return len(self.extra) + len(self.dummy)

    def split(self, sub, params, group):
        """(the parameters to return unchanged, the closed-over values of `group` in the
        jaxpr's order, the parameters standing for the loop's own carries and beyond)."""
        fixed = params[:self.skip]
        consts = [fixed[k] if isinstance(k, int) else sub.const(*self.filled[k.name], k.shape)
                  for k in self.where[group]]
        return fixed, consts, params[self.skip:]


def _types(vals):
    return [(v.dtype, v.shape) for v in vals]


def _check_types(eqn, outs, want, what):
    got = [(o.dtype, o.shape) for o in outs]
    if got != list(want):
        fail(eqn, f"internal: the {what} returns {[type_str(*t) for t in got]}, "
                  f"the loop carries {[type_str(*t) for t in want]}")


@rule("scan")
def _scan(b, eqn, ins):
    p = eqn.params
    closed = p["jaxpr"]
    nc, nk = int(p["num_consts"]), int(p["num_carry"])
    length = int(p["length"])
    consts, own, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    c = _Carries(b, [consts], own, xs)
    carried = c.operands
    slices = [(x.dtype, x.shape[1:]) for x in xs]

    def emit(sub, params):
        fixed, cvals, rest = c.split(sub, params, 0)
        outs = sub.run_jaxpr(closed.jaxpr, closed.consts, cvals + rest)
        _check_types(eqn, outs[:nk], _types(own), "scan body")
        return fixed + outs

    name = function(b, eqn, _base(closed, "scan", "scan_body"), _types(carried) + slices, emit)
    types = _types(carried) + [out_type(eqn, i) for i in range(nk, len(eqn.outvars))]
    attrs = {"length": length, "carries": len(carried)}
    if p.get("reverse"):
        attrs["reverse"] = True
    outs = b.control(f"scan @{name}", carried + xs, types, attrs)
    return outs[c.skip:]


@rule("while")
def _while(b, eqn, ins):
    p = eqn.params
    cj, bj = p["cond_jaxpr"], p["body_jaxpr"]
    cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
    c = _Carries(b, [ins[:cn], ins[cn:cn + bn]], ins[cn + bn:])
    carried = c.operands
    types = _types(carried)

    # A vmapped while_loop whose predicate is batched keeps a `while` in the jaxpr, with
    # a pred[B...] condition: as XLA lowers it, the loop runs while any element's holds,
    # and the body keeps the carries of the finished elements (the predicate's shape is
    # a prefix of every carry's).
    pshape = tuple(cj.jaxpr.outvars[0].aval.shape)

    def predicate(sub, params):
        _, cvals, rest = c.split(sub, params, 0)
        return sub.run_jaxpr(cj.jaxpr, cj.consts, cvals + rest)[0]

    def emit_cond(sub, params):
        pred = predicate(sub, params)
        if pshape:
            pred = sub.op("reduce", [pred], "pred", (), {"dims": list(range(len(pshape))), "kind": "or"})
        return [pred]

    def emit_body(sub, params):
        fixed, cvals, rest = c.split(sub, params, 1)
        outs = sub.run_jaxpr(bj.jaxpr, bj.consts, cvals + rest)
        _check_types(eqn, outs, _types(c.own), "while body")
        if pshape:
            pred = predicate(sub, params)
            kept = []
            for new, old in zip(outs, rest):
                if new.shape[:len(pshape)] != pshape:
                    fail(eqn, f"a batched while_loop predicate {type_str('pred', pshape)} that is "
                              f"not a leading part of the carry {new.type}")
                keep = sub.broadcast(pred, new.shape, list(range(len(pshape))))
                kept.append(sub.op("select", [keep, new, old], new.dtype, new.shape))
            outs = kept
        return fixed + outs

    cond = function(b, eqn, _base(cj, "while_cond", "while_cond"), types, emit_cond)
    body = function(b, eqn, _base(bj, "while_body", "while_body"), types, emit_body)
    outs = b.control(f"while @{cond}, @{body}", carried, types)
    return outs[c.skip:]


@rule("cond")
def _cond(b, eqn, ins):
    # JAX's cond: operand 0 is the branch index (already converted to i32 and, for
    # lax.switch, clamped by earlier equations); PIR's switch clamps it again, which
    # changes nothing.
    index, ops = ins[0], ins[1:]
    if index.shape != ():
        fail(eqn, f"a cond whose index is not a scalar ({index.type})")
    names = []
    for br in eqn.params["branches"]:
        def emit(sub, params, br=br):
            return sub.run_jaxpr(br.jaxpr, br.consts, params)
        names.append(function(b, eqn, _base(br, "cond", "cond_branch"), _types(ops), emit))
    types = [out_type(eqn, i) for i in range(len(eqn.outvars))]
    head = f"switch %{index.name}, " + ", ".join(f"@{n}" for n in names)
    return b.control(head, ops, types)


KEY_OK.update({"scan", "while", "cond"})
