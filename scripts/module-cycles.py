#!/usr/bin/env python3
"""Finds import circles: cycles among the modules of one crate.

A module (one file, `foo.rs` or `foo/mod.rs`; inline `mod x { ... }` blocks such as
`mod tests` count as part of their file) depends on another when its code names an
item of it: `use crate::a::X`, `use super::b`, `use child::Y`, or a path in the code
such as `crate::a::f(..)` or `child::g(..)`. A path is resolved to the module that
defines the item, following `pub use` re-exports, so `crate::World` (re-exported by
lib.rs from world.rs) is a dependency on `world`, and a `pub use` is a dependency of
the re-exporting module only when its own code uses the name. Declaring a child (`mod x;`) is not a
dependency either. Comments (doc links included) and string literals are ignored.

Prints, for every crate root (src/lib.rs, src/main.rs, src/bin/*.rs) under crates/
and dialects/, each strongly connected component of more than one module, with the
references that close it. Exits 1 if any crate has a cycle, so CI can run it.

    python3 scripts/module-cycles.py            # cycles only
    python3 scripts/module-cycles.py --edges    # also every module's dependencies
"""

import os
import re
import sys

ITEM = re.compile(
    r"\b(?:pub(?:\s*\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+|extern\s+\"[^\"]*\"\s+)*"
    r"(fn|struct|enum|trait|type|const|static|union|mod)\s+([A-Za-z_]\w*)"
)
MACRO = re.compile(r"\bmacro_rules!\s*([A-Za-z_]\w*)")
USE = re.compile(r"\b(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);")
PATH = re.compile(r"(?<![\w:])([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)+)")
MOD_DECL = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;", re.M)


def strip(src):
    """Blanks comments and the contents of string and char literals, keeping line breaks."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif re.match(r'b?r#*"', src[i:i + 40]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:])
            close = '"' + m.group(2)
            j = src.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", src[i + 2:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + '"')
            i = j
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", src[i:], re.S)
            if m:
                out.append("' '" + " " * (m.end() - 3))
                i += m.end()
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(s):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def use_paths(tree, prefix=()):
    """Flattens a use tree into (path segments, bound name) pairs."""
    tree = re.sub(r"\s+", " ", tree.strip())
    if tree.startswith("::"):
        tree = tree[2:]
    if "{" in tree and tree.endswith("}"):
        head, body = tree[: tree.index("{")], tree[tree.index("{") + 1: -1]
        head_segs = tuple(s.strip() for s in head.split("::") if s.strip())
        out = []
        for part in split_top(body):
            out += use_paths(part, prefix + head_segs)
        return out
    alias = None
    m = re.match(r"(.*)\s+as\s+(\w+)$", tree)
    if m:
        tree, alias = m.group(1), m.group(2)
    segs = tuple(s.strip() for s in tree.split("::") if s.strip())
    if segs == ("self",):
        segs = ()
    path = prefix + segs
    if not path:
        return []
    return [(path, alias or path[-1])]


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments from the crate root
        self.file = file
        self.children = {}  # name -> module path (file modules only)
        self.items = set()
        self.reexports = []  # (absolute path segments, bound name)
        self.refs = []  # (resolved-from module path, raw segments, line)


def child_file(parent_file, is_dir_owner, name):
    base = os.path.dirname(parent_file) if is_dir_owner else os.path.splitext(parent_file)[0]
    for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
        if os.path.exists(cand):
            return cand
    return None


def load_crate(root_file):
    mods = {}

    def visit(path, file, dir_owner):
        m = Module(path, file)
        mods[path] = m
        src = strip(open(file, encoding="utf-8").read())
        m.src = src
        for name in MOD_DECL.findall(src):
            f = child_file(file, dir_owner, name)
            if f:
                m.children[name] = path + (name,)
                visit(path + (name,), f, os.path.basename(f) == "mod.rs")
        return m

    visit((), root_file, True)
    return mods


def inline_scopes(src):
    """For each offset, the inline module stack (e.g. ['tests']) it sits in."""
    spans = []
    for m in re.finditer(r"\bmod\s+([A-Za-z_]\w*)\s*\{", src):
        depth, j = 1, m.end()
        while j < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[j], 0)
            j += 1
        spans.append((m.start(), j, m.group(1)))

    def at(off):
        return [name for (a, b, name) in spans if a <= off < b]

    return at


def scan(mods):
    for m in mods.values():
        src = m.src
        scope_at = inline_scopes(src)
        m.items |= set(name for _, name in ITEM.findall(src))
        m.items |= set(MACRO.findall(src))
        uses, reexported = [], []
        for u in USE.finditer(src):
            line = src.count("\n", 0, u.start()) + 1
            for segs, bound in use_paths(u.group(2)):
                here = m.path + tuple(scope_at(u.start()))
                absolute = absolutize(mods, m, here, segs)
                if absolute is None:
                    continue
                if u.group(1):
                    m.reexports.append((absolute, bound))
                    if segs[-1] != "*":
                        m.items.add(bound)
                        reexported.append((absolute, bound, line))
                else:
                    uses.append((absolute, line))
        # Paths in code, with use declarations blanked so they are not seen twice.
        code = USE.sub(lambda x: re.sub(r"[^\n]", " ", x.group(0)), src)
        # A re-exported name the module also uses itself is a dependency too.
        for absolute, bound, line in reexported:
            if re.search(r"(?<![\w:])" + re.escape(bound) + r"\b", code):
                uses.append((absolute, line))
        for p in PATH.finditer(code):
            segs = tuple(s.strip() for s in p.group(1).split("::"))
            here = m.path + tuple(scope_at(p.start()))
            absolute = absolutize(mods, m, here, segs)
            if absolute is None:
                continue
            uses.append((absolute, code.count("\n", 0, p.start()) + 1))
        m.uses = uses


def absolutize(mods, m, here, segs):
    """The crate-absolute form of a path written in module `here` of file module `m`,
    or None when it names something outside the crate (std, another crate, a local)."""
    segs = list(segs)
    if segs[0] == "crate":
        return tuple(segs[1:])
    if segs[0] in ("self", "super"):
        base = list(here)
        while segs and segs[0] in ("self", "super"):
            if segs.pop(0) == "super":
                base.pop()
        return tuple(base + segs)
    # A 2018-edition relative path: it must start with a child module of this file.
    if segs[0] in m.children and len(here) == len(m.path):
        return m.path + tuple(segs)
    return None


def resolve(mods, segs, seen=None):
    """The file module defining the item `segs` names (following re-exports)."""
    seen = seen or set()
    path = ()
    i = 0
    while i < len(segs) and path + (segs[i],) in mods:
        path += (segs[i],)
        i += 1
    if i == len(segs) or segs[i] == "*":
        return path  # the module itself (use crate::a; or a glob)
    name = segs[i]
    mod = mods[path]
    for target, bound in mod.reexports:
        key = (path, name, target)
        if key in seen:
            continue
        if bound == name and target[-1] != "*":
            return resolve(mods, target, seen | {key})
        if target[-1] == "*":
            src_mod = resolve(mods, target[:-1], seen | {key})
            if src_mod in mods and name in mods[src_mod].items:
                return resolve(mods, src_mod + (name,), seen | {key})
    return path


def show(path):
    return "::".join(path) if path else "crate"


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def crate_roots(repo):
    for top in ("dialects", "crates"):
        base = os.path.join(repo, top)
        dirs = [base] if top == "dialects" else sorted(os.path.join(base, d) for d in os.listdir(base))
        for d in dirs:
            src = os.path.join(d, "src")
            if not os.path.isdir(src):
                continue
            roots = [os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))]
            bindir = os.path.join(src, "bin")
            if os.path.isdir(bindir):
                roots += sorted(os.path.join(bindir, f) for f in os.listdir(bindir) if f.endswith(".rs"))
            for r in roots:
                yield os.path.relpath(d, repo), os.path.relpath(r, d), r


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with_edges = "--edges" in sys.argv[1:]
    found = False
    for crate, rel, root in crate_roots(repo):
        mods = load_crate(root)
        scan(mods)
        edges, why = {}, {}
        for m in mods.values():
            for segs, line in m.uses:
                target = resolve(mods, segs)
                if target == m.path or target not in mods:
                    continue
                edges.setdefault(m.path, set()).add(target)
                why.setdefault((m.path, target), []).append(f"{os.path.relpath(m.file, repo)}:{line} {show(segs)}")
        cycles = [c for c in sccs(mods.keys(), edges) if len(c) > 1]
        label = f"{crate} ({rel})"
        if with_edges:
            print(f"{label}:")
            for p in sorted(mods):
                deps = ", ".join(show(t) for t in sorted(edges.get(p, ())))
                print(f"  {show(p)} -> {deps or '(nothing)'}")
        if not cycles:
            if with_edges:
                print("  no cycles")
            continue
        found = True
        if not with_edges:
            print(f"{label}:")
        for comp in cycles:
            print(f"  cycle: {' , '.join(show(p) for p in comp)}")
            members = set(comp)
            for a in comp:
                for b in sorted(edges.get(a, ())):
                    if b in members:
                        refs = why[(a, b)]
                        more = f" (+{len(refs) - 1} more)" if len(refs) > 1 else ""
                        print(f"    {show(a)} -> {show(b)}: {refs[0]}{more}")
    if not found:
        print("no module cycles in any crate")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
