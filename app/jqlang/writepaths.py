"""Where a jq path expression points: the concrete locations a write through it would change.

The reference's newer write path (`ResolvePaths`, docs/karta-semantics.md, "Writing back") resolves a
definition's read path to concrete locations before it writes: every token a map key or a
non-negative array index, in document order, an absent trailing key still resolving
(`.spec.template` on an object without a template -> `("spec", "template")`).  A computed
expression (`(.spec.replicas // 1)`, arithmetic, object construction) addresses nothing and is
refused with PathNotWritable, worded as the reference's `PathNotWritableError`.

This walks the parsed expression as jq's `path(...)` does, over the subset paths are made of:
`.a`, `."a"`, `.[0]`, `.[]`, `?`, pipes, commas, `//`, `select`, `if`, `first`, `empty`.
Object iteration follows gojq's sorted key order (the order the engine reads instances in).
One difference from `path(...)`: iterating a literal fallback that is empty (`(.xs // [])[]`
when `.xs` is absent) resolves to no location, where jq raises; the reader sees no instance
there either, so there is nothing to write.

With `defaults=True` (replica counts, app/engine/replicas.py) a fallback that stands in for an
absent field addresses that field: in `A // B`, when A's locations all hold nothing and B yields
no present location (a literal such as the `1` of `.spec.replicas // 1`, or another absent
field), the answer is A's locations, so a count the definition defaults can be written where it
would be read first.

Conditions (`select`, `if`) and literals run on the native evaluator, restricted to navigation,
comparison, logic and a few bounded builtins (no regular expressions, nothing that builds
values), so a definition sent in a request cannot make this process spin or grow.  The number
of values produced is bounded too (BUDGET).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from . import native as nv
from .codegen import compile_expression
from .errors import JqParseError
from .nodes import Node, walk
from .parser import parse

Location = tuple  # of str (object key) | int (array index)
MAX_LOCATIONS = 1000  # the reference runner's result cap: at most 999 outputs
BUDGET = 100_000  # values the walk may produce in all before it gives up
# What a condition (`select`, `if`) in a write path may use: navigation, comparison, logic and a
# few bounded builtins.  Nothing that builds values (`+`, `reduce`, object construction) or
# runs a regular expression: these run in the service process, for any definition.
_CONDITION_KINDS = {
    "identity",
    "field",
    "index",
    "iterate",
    "optional",
    "paren",
    "null",
    "true",
    "false",
    "number",
    "string",
    "if",
    "call",
    "binop",
}
_CONDITION_OPS = {"|", ",", "//", "==", "!=", "<", "<=", ">", ">=", "and", "or"}
_CONDITION_CALLS = {
    "not/0",
    "length/0",
    "type/0",
    "has/1",
    "startswith/1",
    "endswith/1",
    "select/1",
    "empty/0",
    "any/0",
    "all/0",
    "any/1",
    "all/1",
    "any/2",
    "all/2",
    "first/1",
    "IN/1",
    "IN/2",
}


class PathNotWritable(Exception):
    """The expression does not address writable locations (the reference's wording)."""

    def __init__(self, expr: str, why: str):
        self.expression, self.why = expr, why
        super().__init__(f"expression '{expr}' does not address writable locations: {why}")


class _Failed(Exception):
    """A jq run-time error inside the walk (`?` and the left side of `//` swallow it)."""


class _Walk:
    def __init__(self, text: str, defaults: bool = False) -> None:
        self.text = text
        self.left = BUDGET
        self.defaults = defaults

    def refuse(self, why: str) -> PathNotWritable:
        return PathNotWritable(self.text, why)

    def src(self, n: Node) -> str:
        return self.text[n.start : n.end]

    def emit(self, out: list[tuple[Location | None, Any]]) -> list[tuple[Location | None, Any]]:
        self.left -= len(out)
        if self.left < 0:
            raise self.refuse(f"more than {BUDGET} values on the way")
        return out

    def values(self, n: Node, v: Any) -> list[Any]:
        """The outputs of a non-path sub-expression (a condition, a literal) on `v`."""
        for sub in walk(n):
            what = f"{sub.value}/{len(sub.children)}" if sub.kind == "call" else sub.value
            if (
                sub.kind not in _CONDITION_KINDS
                or (sub.kind == "call" and what not in _CONDITION_CALLS)
                or (sub.kind == "binop" and sub.value not in _CONDITION_OPS)
            ):
                shown = sub.value if sub.kind in ("call", "binop") else sub.kind
                raise self.refuse(f"`{shown}` is not evaluated in write paths (`{self.src(sub)}`)")
        prog = _program(self.src(n))
        if prog is None:
            raise self.refuse(f"`{self.src(n)}` is outside what write paths may compute")
        try:
            return prog.run(v)
        except nv.JqError:
            raise _Failed from None
        except nv.Fallback:
            raise self.refuse(f"`{self.src(n)}` cannot be evaluated here") from None

    # A pair is (location, value); location None marks a computed value (no location).
    def go(self, n: Node, loc: Location | None, v: Any) -> list[tuple[Location | None, Any]]:
        k, ch = n.kind, n.children
        out: list[tuple[Location | None, Any]]
        if k == "identity":
            return [(loc, v)]
        if k == "paren":
            return self.go(ch[0], loc, v)
        if k in ("field", "index"):
            if k == "field":
                key: Any = n.value
            elif ch[1].kind == "string":
                key = ch[1].value
            elif ch[1].kind == "number" and ch[1].value.isdigit():
                key = int(ch[1].value)
            elif ch[1].kind in ("number", "unary"):
                raise self.refuse(f"`{self.src(n)}`: an index must be a non-negative integer")
            else:
                raise self.refuse(f"`{self.src(n)}`: a computed key")
            out = []
            for p, t in self.go(ch[0], loc, v):
                if p is None:
                    raise self.computed(n)
                out.append((p + (key,), _index(t, key)))
            return self.emit(out)
        if k == "iterate":
            out = []
            for p, t in self.go(ch[0], loc, v):
                keys = _keys(t)
                if p is None and keys:
                    raise self.computed(n)
                out += [(p + (key,) if p is not None else None, t[key]) for key in keys]
            return self.emit(out)
        if k in ("optional", "try"):
            if k == "try" and ch[1] is not None:
                raise self.refuse("`try ... catch` in a path")
            try:
                return self.go(ch[0], loc, v)
            except _Failed:
                return []
        if k == "binop" and n.value == "|":
            return self.emit([r for p, t in self.go(ch[0], loc, v) for r in self.go(ch[1], p, t)])
        if k == "binop" and n.value == ",":
            return self.go(ch[0], loc, v) + self.go(ch[1], loc, v)
        if k == "binop" and n.value == "//":
            try:
                pairs = self.go(ch[0], loc, v)
            except _Failed:
                pairs = []
            left = [(p, t) for p, t in pairs if t is not None and t is not False]
            if left:
                return left
            right = self.go(ch[1], loc, v)
            if (
                self.defaults
                and pairs
                and right
                and all(p is not None and t is None for p, t in pairs)
                and all(p is None or t is None for p, t in right)
            ):
                return pairs  # B stands in for the absent A: A is where the value goes
            return right
        if k == "if":
            parts = list(ch)
            for i in range(0, len(parts) - 1, 2):
                conds = self.values(parts[i], v)
                if len(conds) != 1:
                    raise self.refuse(f"`{self.src(parts[i])}`: a condition with {len(conds)} outputs")
                if conds[0] is not None and conds[0] is not False:
                    return self.go(parts[i + 1], loc, v)
            last = parts[-1] if len(parts) % 2 == 1 else None
            return self.go(last, loc, v) if last is not None else [(loc, v)]
        if k == "call":
            name, args = n.value, ch
            if name == "select" and len(args) == 1:
                return [(loc, v) for c in self.values(args[0], v) if c is not None and c is not False]
            if name == "first" and len(args) == 1:
                return self.go(args[0], loc, v)[:1]
            if name == "empty" and not args:
                return []
        if k in ("array", "object") and not ch:  # the `[]` / `{}` of a fallback: `(.xs // [])[]`
            return [(None, [] if k == "array" else {})]
        if k in (
            "null",
            "true",
            "false",
            "number",
            "string",
            "array",
            "object",
            "binop",
            "unary",
            "interp",
            "call",
            "format",
        ):
            return [(None, x) for x in self.values(n, v)]  # computed: fine if nothing is addressed through it
        raise self.refuse(f"`{self.src(n)}` ({k}) is not a path")

    def computed(self, n: Node) -> PathNotWritable:
        return self.refuse(f"`{self.src(n)}` reads from a computed value")


def _index(t: Any, key: Any) -> Any:
    if t is None:
        return None
    if isinstance(key, str) and isinstance(t, dict):
        return t.get(key)
    if isinstance(key, int) and isinstance(t, list):
        return t[key] if key < len(t) else None
    raise _Failed


def _keys(t: Any) -> list[Any]:
    if isinstance(t, dict):
        return sorted(t)  # gojq iterates objects by sorted key
    if isinstance(t, list):
        return list(range(len(t)))
    raise _Failed  # iterating null, a number, a string: a jq error


@lru_cache(maxsize=512)
def _program(text: str) -> nv.Program | None:
    return compile_expression(text)


@lru_cache(maxsize=512)
def _parsed(text: str) -> Node:
    return parse(text)


def resolve_paths(expr: str, value: Any, defaults: bool = False) -> list[Location]:
    """The locations `expr` addresses in `value`, in document order (jq's `[path(expr)]`).
    Raises PathNotWritable for anything that is not a location or a jq error on the way.
    `defaults`: a fallback for an absent field addresses that field (module docstring)."""
    try:
        tree = _parsed(expr)
    except JqParseError as e:
        raise PathNotWritable(expr, f"does not parse: {e}") from None
    w = _Walk(expr, defaults)
    try:
        pairs = w.go(tree, (), value)
    except _Failed:
        raise PathNotWritable(expr, "a jq error on the way (indexing or iterating the wrong type)") from None
    except RecursionError:
        raise PathNotWritable(expr, "nested too deeply") from None
    if len(pairs) >= MAX_LOCATIONS:
        raise PathNotWritable(expr, f"query results exceed the allowed number {MAX_LOCATIONS}")
    out = []
    for p, t in pairs:
        if p is None:
            raise PathNotWritable(expr, f"it yields the computed value {_short(t)}, not a location")
        out.append(p)
    return out


def _short(v: Any) -> str:
    import json

    text = json.dumps(v, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
