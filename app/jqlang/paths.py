"""Which parts of its input a jq expression can read: the basis of input projection.

libjq parses the whole input on every run, and parsing dominates the cost, so the engine feeds
jq only what some expression can reach.  `needs(ast, shape)` abstractly interprets the
expression over *paths*: each value flowing through it is either a set of paths into the input
(navigation: `.a.b`, `.[]`, `select`, `//`, `first`, pipes) or derived (computed).  A value is
"consumed" when it is used as a whole (compared, stringified, counted, returned, bound to a
variable): its paths are kept whole.  The final outputs are consumed with `shape` (what the
caller will read of them, e.g. only the resource-relevant fields of a pod template).

The analysis is conservative: anything it does not understand (user functions, `..`, a bind of
`.` itself, assignment, an unknown builtin on the input) means "the whole input".  Projection
keeps every key of an object that is iterated and every element of an array, so output counts,
truthiness and errors are the same as on the full input.
"""

from __future__ import annotations

from typing import Any, overload

from .nodes import Node

Path = tuple  # of str (object key) | None (every element / value)
Tree = dict  # segment -> Tree | True; {} = the node must exist (shallow)


class _Whole(Exception):
    pass


# -- needs trees ---------------------------------------------------------------------------


@overload
def merge(a: Tree | bool, b: Tree | bool | None) -> Tree | bool: ...
@overload
def merge(a: Tree | bool | None, b: Tree | bool | None) -> Tree | bool | None: ...
def merge(a: Tree | bool | None, b: Tree | bool | None) -> Tree | bool | None:
    if a is None:
        return b
    if b is None:
        return a
    if a is True or b is True:
        return True
    assert isinstance(a, dict) and isinstance(b, dict), "a tree is a dict or True"
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out.get(k), v)
    return out


def _at(path: Path, leaf: Tree | bool) -> Tree | bool:
    node: Tree | bool = leaf
    for seg in reversed(path):
        node = {seg: node}
    return node


class _Flow:
    """Values flowing out of an expression: input paths, and whether derived values flow too."""

    __slots__ = ("derived", "paths")

    def __init__(self, paths: frozenset = frozenset(), derived: bool = False):
        self.paths, self.derived = paths, derived

    def step(self, seg: str | None) -> _Flow:
        return _Flow(frozenset(p + (seg,) for p in self.paths), self.derived)

    def __or__(self, other: _Flow) -> _Flow:
        return _Flow(self.paths | other.paths, self.derived or other.derived)


DERIVED = _Flow(frozenset(), True)
EMPTY = _Flow()

# Builtins that read nothing of their input (zero arity).
_NO_INPUT0 = {
    "empty",
    "now",
    "env",
    "builtins",
    "input_filename",
    "true",
    "false",
    "null",
    "nan",
    "infinite",
    "halt",
    "input_line_number",
    "get_search_list",
    "get_prog_origin",
    "get_jq_origin",
}
# f's outputs pass through (first/last/limit/...); the other arguments are consumed.
_PASS_LAST = {"first/1", "last/1", "limit/2", "nth/2", "skip/2"}


class _Analysis:
    def __init__(self) -> None:
        self.tree: Tree | bool | None = None
        self.funcs: dict[str, list[Node]] = {}  # user functions in scope, by name/arity
        self.active: set[int] = set()  # functions being expanded (recursion guard)
        self.vars: dict[str, list[_Flow]] = {}  # $name -> what it holds, innermost last

    def need(self, path: Path, leaf: Tree | bool = True) -> None:
        if path == () and leaf is True:
            raise _Whole
        self.tree = merge(self.tree, _at(path, leaf))

    def consume(self, f: _Flow, shape: Tree | bool = True) -> None:
        for p in f.paths:
            self.need(p, shape)

    def exists(self, f: _Flow) -> None:
        for p in f.paths:
            if p:
                self.need(p, {})

    def flow(self, n: Node | None, base: _Flow) -> _Flow:
        if n is None:
            return EMPTY
        k = n.kind
        ch = n.children
        if k == "identity":
            return base
        if k in ("paren", "optional"):
            return self.flow(ch[0], base)
        if k == "field":
            return self.flow(ch[0], base).step(n.value)
        if k == "index":
            target = self.flow(ch[0], base)
            key = ch[1]
            if key.kind == "string":
                return target.step(key.value)
            self.consume(self.flow(key, base))  # the subscript runs on the term's input
            return target.step(None)
        if k in ("iterate", "slice"):
            target = self.flow(ch[0], base)
            for c in ch[1:]:
                self.consume(self.flow(c, base))
            return target.step(None)
        if k == "var":
            bound = self.vars.get(n.value)
            return bound[-1] if bound else DERIVED
        if k in ("null", "true", "false", "number", "string", "objkey", "pvar"):
            return DERIVED
        if k == "break":
            return EMPTY
        if k == "recurse":
            self.consume(base)
            return DERIVED
        if k == "binop":
            op = n.value
            if op == "|":
                left = self.flow(ch[0], base)
                self.exists(left)  # the right side runs once per left output: keep them all
                return self.flow(ch[1], left)
            left, right = self.flow(ch[0], base), self.flow(ch[1], base)
            if op == ",":
                return left | right
            if op == "//":
                self.exists(left)  # its truthiness decides; projection keeps the node
                return left | right
            self.consume(left)
            self.consume(right)
            return DERIVED
        if k in ("array", "unary", "interp", "label") or (k == "format" and ch):
            out = EMPTY
            for c in n.subnodes():
                out = out | self.flow(c, base)
            if k == "label":
                return out
            self.consume(out)
            return DERIVED
        if k == "format":  # bare @csv formats its input
            self.consume(base)
            return DERIVED
        if k == "object":
            for entry in ch:
                key, value = entry.children
                if value is None and key.kind in ("objkey", "string"):
                    self.consume(base.step(key.value))  # {a} is {a: .a}
                    continue
                if key.kind not in ("objkey", "string", "var"):
                    self.consume(self.flow(key, base))
                if value is not None:
                    self.consume(self.flow(value, base))
            return DERIVED
        if k == "try":
            out = self.flow(ch[0], base)
            if ch[1] is not None:
                out = out | self.flow(ch[1], DERIVED)  # catch runs on the error
            return out
        if k == "if":
            parts = list(ch)
            out = EMPTY
            i = 0
            while i + 1 < len(parts):
                self.consume(self.flow(parts[i], base))
                out = out | self.flow(parts[i + 1], base)
                i += 2
            out = out | (self.flow(parts[i], base) if i < len(parts) and parts[i] is not None else base)
            return out
        if k == "bind":
            source, *patterns, body = ch
            src = self.flow(source, base)
            if len(patterns) == 1 and patterns[0].kind == "pvar":
                # `path as $x | body`: $x stands for those paths; the body runs once per output
                self.exists(src)
                self.vars.setdefault(patterns[0].value, []).append(src)
                try:
                    return self.flow(body, base)
                finally:
                    self.vars[patterns[0].value].pop()
            self.consume(src)  # destructuring: its parts can be used any way
            for pat in patterns:
                self._pattern(pat, base)
            return self.flow(body, base)
        if k in ("reduce", "foreach"):
            self.consume(self.flow(ch[0], base))
            self._pattern(ch[1], base)
            self.consume(self.flow(ch[2], base))
            for c in ch[3:]:
                self.consume(self.flow(c, DERIVED))
            return DERIVED
        if k == "call":
            return self._call(n, base)
        if k == "funcdef":
            # Functions with value parameters ($x) are expanded at their call sites; filter
            # parameters (closures) would need more than this analysis knows: whole input.
            if any(not p.startswith("$") for p in n.names):
                raise _Whole
            sig = f"{n.value}/{len(n.names)}"
            self.funcs.setdefault(sig, []).append(n)
            try:
                return self.flow(ch[1], base) if ch[1] is not None else base
            finally:
                self.funcs[sig].pop()
        raise _Whole  # update, import/include/module, anything new

    def _pattern(self, pat: Node | None, base: _Flow) -> None:
        if pat is None:
            return
        if pat.kind == "pentry":
            key = pat.children[0]
            if key is not None and key.kind not in ("objkey", "var", "string", "pvar"):
                self.consume(self.flow(key, base))
        for c in pat.subnodes():
            if c.kind in ("parray", "pobject", "pentry"):
                self._pattern(c, base)

    def _call(self, n: Node, base: _Flow) -> _Flow:
        name, args = n.value, n.children
        sig = f"{name}/{len(args)}"
        defs = self.funcs.get(sig)
        if defs:
            fn = defs[-1]
            if id(fn) in self.active:
                raise _Whole  # recursion
            for a in args:
                self.consume(self.flow(a, base))  # value parameters: evaluated on the input
            self.active.add(id(fn))
            for param in fn.names:  # parameters shadow outer variables of the same name
                self.vars.setdefault(param, []).append(DERIVED)
            try:
                return self.flow(fn.children[0], base)
            finally:
                self.active.discard(id(fn))
                for param in fn.names:
                    self.vars[param].pop()
        if not args:
            if name in _NO_INPUT0:
                return DERIVED if name != "empty" else EMPTY
            if name in ("any", "all"):
                self.consume(base)
                return DERIVED
            self.consume(base)  # length, keys, tostring, not, type, to_entries, ...
            return DERIVED
        if sig == "select/1":
            self.consume(self.flow(args[0], base))
            return base
        if sig in _PASS_LAST:
            for a in args[:-1]:
                self.consume(self.flow(a, base))
            return self.flow(args[-1], base)
        if sig in ("any/2", "all/2"):
            gen = self.flow(args[0], base)
            self.exists(gen)
            self.consume(self.flow(args[1], gen))
            return DERIVED
        if sig in ("any/1", "all/1", "map/1"):
            elements = base.step(None)
            self.exists(elements)  # f runs once per element: keep every element
            self.consume(self.flow(args[0], elements))
            return DERIVED
        if sig in ("add/1", "error/1", "isempty/1", "IN/2"):
            for a in args:
                self.consume(self.flow(a, base))
            return DERIVED
        # Any other builtin: it may read its whole input, and its arguments run on the input.
        self.consume(base)
        for a in args:
            self.consume(self.flow(a, base))
        return DERIVED


def needs(ast: Node, shape: Tree | bool = True) -> Tree | bool:
    """What of the input the expression may read, its outputs being read as `shape`.
    True means everything; {} means nothing."""
    a = _Analysis()
    try:
        a.consume(a.flow(ast, _Flow(frozenset({()}))), shape)
    except _Whole:
        return True
    return a.tree if a.tree is not None else {}


# -- projection ----------------------------------------------------------------------------


def project(value: Any, tree: Tree | bool) -> Any:
    """Keep only what the tree reaches.  Scalars are kept as they are, arrays keep every
    element, iterated objects keep every key: output counts, truthiness and errors are those
    of the full input."""
    if type(tree) is not dict:  # True: all of it
        return value
    t = type(value)
    if t is dict:
        every = tree.get(None)
        if every is None:
            return {k: project(value[k], sub) for k, sub in tree.items() if k in value}
        if len(tree) == 1:
            return {k: project(v, every) for k, v in value.items()}
        return {k: project(v, merge(tree[k], every) if k in tree else every) for k, v in value.items()}
    if t is list:
        every = tree.get(None)
        if every is None or any(k is not None for k in tree):
            return value  # `.list.field` fails on the full input too: keep it intact
        return [project(v, every) for v in value]
    return value
