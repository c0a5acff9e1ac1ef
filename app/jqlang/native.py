"""jq expressions evaluated in Python, straight on the parsed object: no libjq call.

A definition's expressions are compiled once (per text) from the AST `app/jqlang` parses into
Python closures.  Each closure takes an input value and the variables and returns the list of
its outputs.  The covered subset is what definitions are made of: paths, iteration, pipes and
commas, `select`, `map`, comparisons, `and`/`or`/`not`, `//`, `if`, `length`, `any`/`all`,
`to_entries`, string tests, `tostring`, object and array construction, `as $x`, `reduce`.

Exactness comes first.  The program answers as the libjq path (itself worded as gojq) answers,
or not at all: `codegen.compile_expression` returns None for anything outside the subset, and at run
time anything the native code cannot vouch for - every jq error (its message is libjq's to
word), an output cap reached, a number beyond what both agree on - raises `Fallback`, and the
caller evaluates that expression for that input with libjq, as before.  The differential tests
run every catalog expression on every fixture, and random ones, through both paths (and gojq).

Nothing here can run away: no recursion, `range`, `until`, `while`, `repeat` or user functions
are compiled, so every loop is bounded by the input's size, and products of iterations share
one budget of outputs per evaluation (BUDGET): past it the expression goes to libjq, which the
evaluation deadline cuts, naming the expression, as before.

The closures are the reference form.  codegen.py turns the commonest shapes into Python source
(one function per expression, no call per node) and embeds these closures for the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .errors import JqParseError
from .nodes import Node
from .parser import parse
from .values import gojq_tostring

MAX_RESULTS = 1000
Env = dict[str, Any]
Fn = Callable[[Any, Env], list[Any]]


class Fallback(Exception):
    """The native path cannot answer this one exactly: evaluate it with libjq."""


class JqError(Fallback):
    """A jq run-time error (`try` and `?` swallow it; otherwise libjq words it)."""


class Unsupported(Exception):
    """Raised at compile time: the expression falls back to libjq as a whole."""


# -- values ----------------------------------------------------------------------------------


def _truthy(v: Any) -> bool:
    return v is not None and v is not False


def _rank(v: Any) -> int:
    if v is None:
        return 0
    if v is False:
        return 1
    if v is True:
        return 2
    if isinstance(v, (int, float)):
        return 3
    if isinstance(v, str):
        return 4
    if isinstance(v, list):
        return 5
    return 6


def _cmp(a: Any, b: Any) -> int:
    """jq's total order: null < false < true < numbers < strings < arrays < objects."""
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 3 or ra == 4:
        return -1 if a < b else (1 if a > b else 0)
    if ra == 5:
        for x, y in zip(a, b, strict=False):  # the shorter array's prefix decides first
            c = _cmp(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ra == 6:
        ka, kb = sorted(a), sorted(b)
        c = _cmp(ka, kb)
        if c:
            return c
        for k in ka:
            c = _cmp(a[k], b[k])
            if c:
                return c
        return 0
    return 0


def _eq(a: Any, b: Any) -> bool:
    return _cmp(a, b) == 0


class _Key:
    """A sort key with jq's order."""

    __slots__ = ("v",)

    def __init__(self, v: Any):
        self.v = v

    def __lt__(self, other: _Key) -> bool:
        return _cmp(self.v, other.v) < 0


def output_value(v: Any) -> Any:
    """A value as it comes back through libjq's text: integral numbers below 1e17 print as
    integers; larger ones, and anything exotic, the native path does not vouch for."""
    if type(v) is float:
        if v.is_integer():
            if abs(v) < 1e17:
                return int(v)
            raise Fallback
        if not math.isfinite(v):
            raise Fallback
        return v
    if type(v) is int:
        if abs(v) >= 2**53:
            raise Fallback
        return v
    if type(v) is list:
        return [output_value(x) for x in v]
    if type(v) is dict:
        return {k: output_value(x) for k, x in v.items()}
    return v


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _iterate(v: Any) -> list[Any]:
    if type(v) is list:
        return v
    if type(v) is dict:
        return [v[k] for k in sorted(v)]  # gojq walks object keys sorted
    raise JqError


def _length(v: Any) -> Any:
    if v is None:
        return 0
    if v is True or v is False:
        raise JqError
    if _num(v):
        return abs(v)
    if isinstance(v, (str, list, dict)):
        return len(v)
    raise JqError


def _contains(a: Any, b: Any) -> bool:
    if type(a) is dict and type(b) is dict:
        return all(k in a and _contains(a[k], bv) for k, bv in b.items())
    if type(a) is list and type(b) is list:
        return all(any(_contains(x, y) for x in a) for y in b)
    if type(a) is str and type(b) is str:
        return b in a
    if _rank(a) == _rank(b) and _rank(a) != 4:
        return _eq(a, b)
    raise JqError


def add_values(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if _num(a) and _num(b):
        return output_value(a + b)  # 1.5 + 1.5 prints as 3 through libjq's text
    if type(a) is str and type(b) is str:
        return a + b
    if type(a) is list and type(b) is list:
        return a + b
    if type(a) is dict and type(b) is dict:
        return {**a, **b}
    raise JqError


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return add_values(a, b)
    if op == "-":
        if _num(a) and _num(b):
            return a - b
        if type(a) is list and type(b) is list:
            return [x for x in a if not any(_eq(x, y) for y in b)]
        raise JqError
    if op == "*":
        if _num(a) and _num(b):
            return a * b
        raise Fallback  # string repetition, deep merge: libjq's rules
    if op == "/":
        if _num(a) and _num(b):
            if b == 0:
                raise JqError
            return a / b
        if type(a) is str and type(b) is str and b:
            return a.split(b)
        raise Fallback
    if op == "%":
        if _num(a) and _num(b) and a >= 0 and b > 0 and float(a).is_integer() and float(b).is_integer():
            return int(a) % int(b)
        raise Fallback
    raise Unsupported(op)


_COMPARE = {
    "==": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


def _index(t: Any, k: Any) -> Any:
    if t is None:
        if k is None or type(k) is str or _num(k):
            return None
        raise Fallback
    if type(t) is dict and type(k) is str:
        return t.get(k)
    if type(t) is list and _num(k):
        if not float(k).is_integer():
            raise Fallback
        i = int(k)
        if i < 0:
            i += len(t)
        return t[i] if 0 <= i < len(t) else None
    raise JqError


def _slice(t: Any, lo: Any, hi: Any) -> Any:
    if t is None:
        return None
    if not isinstance(t, (list, str)) or not all(x is None or (_num(x) and float(x).is_integer()) for x in (lo, hi)):
        raise Fallback
    return t[None if lo is None else int(lo) : None if hi is None else int(hi)]


# -- compiling -------------------------------------------------------------------------------


def path_chain(n: Node) -> tuple[Node, list[Any]]:
    """The base and constant keys of a path `.a.b["c"][0]` (keys outermost last)."""
    keys: list[Any] = []
    while True:
        if n.kind == "field":
            keys.append(n.value)
        elif n.kind == "index" and n.children[1].kind == "string":
            keys.append(n.children[1].value)
        elif n.kind == "index" and n.children[1].kind == "number" and n.children[1].value.isdigit():
            keys.append(int(n.children[1].value))
        else:
            break
        n = n.children[0]
    keys.reverse()
    return n, keys


def _walk(t: Any, keys: list[Any]) -> Any:
    for key in keys:
        if type(t) is dict and type(key) is str:
            t = t.get(key)
        elif t is None:
            continue
        else:
            t = _index(t, key)
    return t


# Outputs the pipes and bindings of one evaluation may build in all: past that (a product of
# iterations), the native path stops and libjq streams the expression under its output cap and
# the evaluation deadline.  Counted across the whole evaluation, inner pipes first, so nothing
# is built far beyond it: a runaway product hands back within milliseconds.
BUDGET = 100_000
_BUDGET = ""  # the env key of the countdown (no jq variable is named "")


def _bounded(out: list[Any], env: Env) -> list[Any]:
    left = env[_BUDGET]
    left[0] -= len(out)
    if left[0] < 0:
        raise Fallback
    return out


def compile_part(node: Node) -> Fn:
    """A part of a construction that counts as one output (object entries, interpolations):
    when it may output several values and fails, jq has emitted the constructions of the values
    before the failure (`{k: (., error)}?` is one object), which a list cannot say: libjq answers."""
    fn = compile_node(node)
    if _at_most_one(node):
        return fn

    def guarded(v: Any, env: Env) -> list[Any]:
        try:
            return fn(v, env)
        except JqError:
            raise Fallback from None

    return guarded


def _single(fn: Fn, v: Any, env: Env) -> Any:
    out = fn(v, env)
    if len(out) != 1:
        raise Fallback  # a multi-valued (or empty) argument: libjq's cartesian rules
    return out[0]


One = Callable[[Any, Env], Any]  # an expression with exactly one output: that output


def literal_value(n: Node) -> Any:
    if n.kind == "number":
        const = float(n.value) if any(c in n.value for c in ".eE") else int(n.value)
        try:
            return output_value(const)
        except Fallback:
            raise Unsupported("a number literal beyond 1e17") from None
    return {"null": None, "true": True, "false": False}.get(n.kind) if n.kind != "string" else n.value


def _one(n: Node) -> One | None:
    """The exactly-one-output form of a node (no lists built), or None when it may output zero
    or several values.  Most of a definition is made of these: paths, comparisons, `//`."""
    k = n.kind
    if k == "identity":
        return lambda v, env: v
    if k in ("null", "true", "false", "number", "string"):
        const = literal_value(n)
        return lambda v, env: const
    if k == "paren":
        return _one(n.children[0])
    if k == "var":
        name = n.value
        if name == "$ENV":
            return lambda v, env: {}
        if name == "$__loc__" or "::" in name:
            raise Unsupported(name)
        return lambda v, env: env[name] if name in env else _fallback()
    if k in ("field", "index"):
        base, keys = path_chain(n)
        if not keys:
            return None
        if base.kind == "identity":
            if len(keys) == 1:
                key = keys[0]
                if type(key) is str:
                    return lambda v, env: v.get(key) if type(v) is dict else _index(v, key)
            return lambda v, env: _walk(v, keys)
        b = _one(base)
        if b is None:
            return None
        one_base = b
        return lambda v, env: _walk(one_base(v, env), keys)
    if k == "binop":
        op = n.value
        if op == ",":
            return None
        left, right = _one(n.children[0]), _one(n.children[1])
        if left is None or right is None:
            return None
        if op == "|":
            return lambda v, env: right(left(v, env), env)
        if op == "//":

            def alt(v: Any, env: Env) -> Any:
                x = left(v, env)
                return x if x is not None and x is not False else right(v, env)

            return alt
        if op == "and":
            return lambda v, env: _truthy(left(v, env)) and _truthy(right(v, env))
        if op == "or":
            return lambda v, env: _truthy(left(v, env)) or _truthy(right(v, env))
        if op == "==" or op == "!=":
            neg = op == "!="

            def eq(v: Any, env: Env) -> bool:
                b = right(v, env)  # jq evaluates the right side first
                a = left(v, env)
                if type(a) is type(b) and type(a) is str:
                    return (a != b) if neg else (a == b)
                return (_cmp(a, b) != 0) if neg else (_cmp(a, b) == 0)

            return eq
        if op in _COMPARE:
            test = _COMPARE[op]
            return lambda v, env: test(_cmp(left(v, env), right(v, env)))
        if op in ("+", "-", "*", "/", "%"):

            def arith(v: Any, env: Env) -> Any:
                b = right(v, env)
                return output_value(_arith(op, left(v, env), b))

            return arith
        return None
    if k == "if":
        ch = list(n.children)
        if ch[-1] is None:
            return None  # no else (`.`): rare; the list form handles it
        parts = [_one(c) for c in ch]
        if any(p is None for p in parts):
            return None
        conds, thens, otherwise = parts[0:-1:2], parts[1:-1:2], parts[-1]

        def branch(v: Any, env: Env) -> Any:
            for c, t in zip(conds, thens, strict=True):
                if _truthy(c(v, env)):  # type: ignore[misc]
                    return t(v, env)  # type: ignore[misc]
            return otherwise(v, env)  # type: ignore[misc]

        return branch
    if k == "array":
        if not n.children:
            return lambda v, env: []
        body = compile_node(n.children[0])
        return lambda v, env: body(v, env)
    if k == "unary":
        operand = _one(n.children[0])
        if operand is None:
            return None
        sign = -1 if n.value == "-" else 1
        return lambda v, env: sign * x if _num(x := operand(v, env)) else _raise()
    if k == "bind":
        source, *patterns, body = n.children
        if len(patterns) != 1 or patterns[0].kind != "pvar":
            raise Unsupported("destructuring")
        name = patterns[0].value
        src, b = _one(source), _one(body)
        if src is None or b is None:
            return None
        return lambda v, env: b(v, {**env, name: src(v, env)})
    if k == "call":
        name = n.value
        if not n.children:
            f1 = ONE_VALUE.get(name)  # None: it may output nothing
            return None if f1 is None else (lambda v, env: f1(v))
        if name == "map" and len(n.children) == 1:
            f = _one(n.children[0])
            if f is not None:
                return lambda v, env: [f(x, env) for x in _iterate(v)]
            return None
        if name in ("any", "all") and len(n.children) == 2:
            gen, cond = compile_node(n.children[0]), _one(n.children[1])
            if cond is None:
                return None
            if name == "any":
                return lambda v, env: any(_truthy(cond(x, env)) for x in gen(v, env))
            return lambda v, env: all(_truthy(cond(x, env)) for x in gen(v, env))
        return None
    return None


def _raise() -> Any:
    raise JqError


def compile_node(n: Node) -> Fn:
    one = _one(n)
    if one is not None:
        return lambda v, env: [one(v, env)]
    # Identity, literals, variables, arrays and paths from `.` always have the one-output form.
    k = n.kind
    if k == "paren":
        return compile_node(n.children[0])
    if k == "field" or k == "index":
        base, keys = path_chain(n)
        if keys:  # `x.a.b["c"][0]` over a many-valued `x`: one walk down the constant keys each
            target = compile_node(base)
            return lambda v, env: [_walk(t, keys) for t in target(v, env)]
    if k == "field":
        target, name = compile_node(n.children[0]), n.value
        return lambda v, env: [_index(t, name) for t in target(v, env)]
    if k == "index":
        target, key = compile_node(n.children[0]), compile_node(n.children[1])

        def index(v: Any, env: Env) -> list[Any]:
            ks = key(v, env)
            return [_index(t, kv) for kv in ks for t in target(v, env)]

        return index
    if k == "slice":
        target = compile_node(n.children[0])
        lo = compile_node(n.children[1]) if n.children[1] is not None else None
        hi = compile_node(n.children[2]) if n.children[2] is not None else None

        def sl(v: Any, env: Env) -> list[Any]:
            a = _single(lo, v, env) if lo else None
            b = _single(hi, v, env) if hi else None
            return [_slice(t, a, b) for t in target(v, env)]

        return sl
    if k == "iterate":
        target = compile_node(n.children[0])
        return lambda v, env: [x for t in target(v, env) for x in _iterate(t)]
    if k == "optional":
        c = n.children[0]
        if c.kind in ("field", "index", "slice", "iterate"):
            return _optional_access(c)
        return _try(c)
    if k == "try":
        if n.children[1] is not None:
            raise Unsupported("catch")  # the caught value is libjq's message
        return _try(n.children[0])
    if k == "object":
        return _object(n)
    if k == "interp":
        parts = [(p.value, None) if p.kind == "string" else (None, compile_part(p)) for p in n.children]

        def interp(v: Any, env: Env) -> list[Any]:
            out = []
            for text, fn in parts:
                out.append(str(text) if fn is None else gojq_tostring(_single(fn, v, env)))
            return ["".join(out)]

        return interp
    if k == "unary":
        operand = compile_node(n.children[0])
        sign = -1 if n.value == "-" else 1

        def unary(v: Any, env: Env) -> list[Any]:
            out = []
            for x in operand(v, env):
                if not _num(x):
                    raise JqError
                out.append(sign * x)
            return out

        return unary
    if k == "binop":
        return _binop(n)
    if k == "if":
        return _if(n)
    if k == "bind":
        return _bind(n)
    if k == "reduce":
        return _reduce(n)
    if k == "call":
        return _call(n)
    raise Unsupported(k)


def _optional_access(n: Node) -> Fn:
    """`.a?`, `x[k]?`, `x[a:b]?`, `x[]?`: only the access itself may fail quietly (libjq's
    INDEX_OPT / EACH_OPT); an error in `x` or `k` is still an error."""
    target = compile_node(n.children[0])
    if n.kind == "iterate":

        def each(v: Any, env: Env) -> list[Any]:
            out: list[Any] = []
            for t in target(v, env):
                try:
                    out += _iterate(t)
                except JqError:
                    pass
            return out

        return each
    if n.kind == "slice":
        raise Unsupported("optional slice")
    if n.kind == "field":
        name = n.value
        keyfn: Fn = lambda v, env: [name]  # noqa: E731
    else:
        keyfn = compile_node(n.children[1])

    def access(v: Any, env: Env) -> list[Any]:
        out: list[Any] = []
        for k in keyfn(v, env):
            for t in target(v, env):
                try:
                    out.append(_index(t, k))
                except JqError:
                    pass
        return out

    return access


def _try(node: Node) -> Fn:
    """`try e` / `e?`: jq keeps the outputs before an error and drops the error.  A list does
    not say which outputs came before it, so only a body with at most one output (then: none)
    is answered here; any other failing body goes to libjq."""
    body, one = compile_node(node), _at_most_one(node)

    def attempt(v: Any, env: Env) -> list[Any]:
        try:
            return body(v, env)
        except JqError:
            if one:
                return []
            raise Fallback from None

    return attempt


# kinds whose output count is at most one when their parts' are (structurally)
_ONE = {
    "identity",
    "null",
    "true",
    "false",
    "number",
    "string",
    "var",
    "array",
    "object",
    "interp",
    "paren",
    "field",
    "index",
    "slice",
    "unary",
    "optional",
    "try",
    "if",
}
_ONE_CALLS = {
    "IN",
    "test",
    "gsub",
    "select",
    "map",
    "any",
    "all",
    "first",
    "has",
    "contains",
    "startswith",
    "endswith",
    "ltrimstr",
    "rtrimstr",
    "split",
    "join",
    "error",
    "sort_by",
    "min_by",
    "max_by",
    "unique_by",
    "group_by",
    "with_entries",
    "limit",
}


def _at_most_one(n: Node) -> bool:
    k = n.kind
    if k in ("array", "object", "interp"):
        return True  # native construction insists on single parts, or falls back
    if k == "binop":
        if n.value == ",":
            return False
        return all(_at_most_one(c) for c in n.children)
    if k == "call":
        if not n.children:
            return True  # every native builtin of arity 0 outputs at most one value
        return n.value in _ONE_CALLS and all(_at_most_one(c) for c in n.children)
    if k in _ONE:
        return all(_at_most_one(c) for c in n.subnodes())
    return False


def _field_of(key: Any) -> Fn:
    return lambda v, env: [_index(v, key)]


def _object(n: Node) -> Fn:
    entries: list[tuple[Any, Fn | None, Fn]] = []  # (constant key | None, key fn, value fn)
    for e in n.children:
        key, value = e.children
        if key.kind == "objkey" or key.kind == "string":
            kconst, kfn = key.value, None
        elif key.kind == "var":
            if value is not None:
                raise Unsupported("variable key")
            name = key.value
            kconst, kfn = name[1:], None
            entries.append((kconst, None, (lambda nm: lambda v, env: [env[nm]] if nm in env else _fallback())(name)))
            continue
        elif key.kind in ("paren", "interp"):
            kconst, kfn = None, compile_part(key)
        else:
            raise Unsupported(key.kind)
        if value is None:  # {a}: .a
            if kconst is None:
                raise Unsupported("shorthand")
            vfn = _field_of(kconst)
        else:
            vfn = compile_part(value)
        entries.append((kconst, kfn, vfn))

    def build(v: Any, env: Env) -> list[Any]:
        out: dict[str, Any] = {}
        for kconst, kfn, vfn in entries:
            key = kconst if kfn is None else _single(kfn, v, env)
            if type(key) is not str:
                raise JqError
            out[key] = _single(vfn, v, env)
        return [out]

    return build


def _binop(n: Node) -> Fn:
    op = n.value
    left, right = compile_node(n.children[0]), compile_node(n.children[1])
    if op == "|":
        if _at_most_one(n.children[1]):  # no product: at most the left side's outputs
            return lambda v, env: [y for x in left(v, env) for y in right(x, env)]
        return lambda v, env: _bounded([y for x in left(v, env) for y in right(x, env)], env)
    if op == ",":
        return lambda v, env: left(v, env) + right(v, env)
    if op == "//":  # errors on the left are errors (libjq and gojq alike), not "no value"

        def alt(v: Any, env: Env) -> list[Any]:
            got = [x for x in left(v, env) if _truthy(x)]
            return got if got else right(v, env)

        return alt
    if op == "and" or op == "or":
        want = op == "or"

        def logic(v: Any, env: Env) -> list[Any]:
            out = []
            for x in left(v, env):
                if _truthy(x) == want:
                    out.append(want)
                else:
                    out += [_truthy(y) for y in right(v, env)]
            return out

        return logic
    if op in _COMPARE:
        test = _COMPARE[op]
        return lambda v, env: [test(_cmp(a, b)) for b in right(v, env) for a in left(v, env)]
    if op in ("+", "-", "*", "/", "%"):
        return lambda v, env: [output_value(_arith(op, a, b)) for b in right(v, env) for a in left(v, env)]
    raise Unsupported(op)


def _if(n: Node) -> Fn:
    ch = list(n.children)
    has_else = len(ch) % 2 == 1
    otherwise = compile_node(ch[-1]) if has_else and ch[-1] is not None else (lambda v, env: [v])
    pairs = [(compile_node(ch[i]), compile_node(ch[i + 1])) for i in range(0, len(ch) - (1 if has_else else 0), 2)]

    def branch(i: int, v: Any, env: Env) -> list[Any]:
        if i == len(pairs):
            return otherwise(v, env)
        cond, then = pairs[i]
        out = []
        for c in cond(v, env):
            out += then(v, env) if _truthy(c) else branch(i + 1, v, env)
        return out

    return lambda v, env: branch(0, v, env)


def _bind(n: Node) -> Fn:
    source, *patterns, body = n.children
    if len(patterns) != 1 or patterns[0].kind != "pvar":
        raise Unsupported("destructuring")
    name = patterns[0].value
    src, b = compile_node(source), compile_node(body)
    if _at_most_one(body):
        return lambda v, env: [y for x in src(v, env) for y in b(v, {**env, name: x})]
    return lambda v, env: _bounded([y for x in src(v, env) for y in b(v, {**env, name: x})], env)


def _reduce(n: Node) -> Fn:
    source, pattern, init, update = n.children
    if pattern.kind != "pvar":
        raise Unsupported("destructuring")
    name = pattern.value
    src, ini, upd = compile_node(source), compile_node(init), compile_node(update)

    def reduce(v: Any, env: Env) -> list[Any]:
        acc = _single(ini, v, env)
        for x in src(v, env):
            acc = _single(upd, acc, {**env, name: x})
        return [acc]

    return reduce


# -- builtins --------------------------------------------------------------------------------


def _entries(v: Any) -> list[Any]:
    if type(v) is dict:
        return [{"key": k, "value": v[k]} for k in sorted(v)]
    raise Fallback  # arrays and the rest: libjq's rules


def _from_entries(v: Any) -> Any:
    if type(v) is not list:
        raise Fallback
    out: dict[str, Any] = {}
    for e in v:
        if type(e) is not dict:
            raise Fallback
        key = next((e[k] for k in ("key", "k", "name", "Name", "Key", "K") if k in e and _truthy(e[k])), None)
        if type(key) is not str:
            raise Fallback
        out[key] = e["value"] if "value" in e else e.get("v")
    return out


def _keys(v: Any) -> Any:
    if type(v) is dict:
        return sorted(v)
    if type(v) is list:
        return list(range(len(v)))
    raise JqError


def _type(v: Any) -> str:
    return ["null", "boolean", "boolean", "number", "string", "array", "object"][_rank(v)]


def _tonumber(v: Any) -> Any:
    if _num(v):
        return v
    if type(v) is str:
        try:
            f = float(v)
        except ValueError:
            raise JqError from None
        if not math.isfinite(f) or v.strip() != v or not v:
            raise Fallback
        return int(f) if f.is_integer() and abs(f) < 1e17 else f
    raise JqError


def _need_str(v: Any) -> str:
    if type(v) is not str:
        raise Fallback  # libjq's rules for other types differ between versions; let it say
    return v


# Builtins of arity 0 with exactly one output: that output, as a function of the input.
ONE_VALUE: dict[str, Callable[[Any], Any]] = {
    "not": lambda v: not _truthy(v),
    "length": _length,
    "keys": _keys,
    "to_entries": _entries,
    "from_entries": _from_entries,
    "type": _type,
    "tostring": gojq_tostring,
    "tojson": lambda v: gojq_tostring(v) if type(v) is not str else gojq_tostring([v])[1:-1],
    "tonumber": _tonumber,
    "ascii_downcase": lambda v: _need_str(v).lower() if _need_str(v).isascii() else _fallback(),
    "ascii_upcase": lambda v: _need_str(v).upper() if _need_str(v).isascii() else _fallback(),
    "any": lambda v: any(_truthy(x) for x in _iterate(v)),
    "all": lambda v: all(_truthy(x) for x in _iterate(v)),
    "add": lambda v: _add_all(_iterate(v)),
    "first": lambda v: _index(v, 0),
    "last": lambda v: _index(v, -1),
    "reverse": lambda v: _reverse(v),
    "sort": lambda v: sorted(_list(v), key=_Key),
    "unique": lambda v: _unique(_list(v)),
    "min": lambda v: min(_list(v), key=_Key) if _list(v) else None,
    "max": lambda v: max(_list(v), key=_Key) if _list(v) else None,
    "floor": lambda v: math.floor(v) if _num(v) and math.isfinite(v) else _fallback(),
    "ceil": lambda v: math.ceil(v) if _num(v) and math.isfinite(v) else _fallback(),
    "env": lambda v: {},
}


# Every builtin of arity 0: the list of its outputs (the filters output none or the input).
def _as_outputs(f: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    return lambda v: [f(v)]


_ZERO: dict[str, Callable[[Any], list[Any]]] = {
    **{name: _as_outputs(f) for name, f in ONE_VALUE.items()},
    "empty": lambda v: [],
    "values": lambda v: [v] if v is not None else [],
    "nulls": lambda v: [v] if v is None else [],
    "booleans": lambda v: [v] if v is True or v is False else [],
    "numbers": lambda v: [v] if _num(v) else [],
    "strings": lambda v: [v] if type(v) is str else [],
    "arrays": lambda v: [v] if type(v) is list else [],
    "objects": lambda v: [v] if type(v) is dict else [],
    "iterables": lambda v: [v] if type(v) in (list, dict) else [],
    "scalars": lambda v: [v] if type(v) not in (list, dict) else [],
}


def _fallback() -> Any:
    raise Fallback


def _list(v: Any) -> list[Any]:
    if type(v) is not list:
        if type(v) is dict:
            raise Fallback  # some array builtins walk an object's values: libjq's rules
        raise JqError
    return v


def _reverse(v: Any) -> Any:
    if type(v) is list:
        return v[::-1]
    if v is None:
        return []
    raise Fallback


def _unique(v: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in sorted(v, key=_Key):
        if not out or not _eq(out[-1], x):
            out.append(x)
    return out


def _add_all(xs: list[Any]) -> Any:
    """`add`: reduce .[] as $x (null; . + $x), in linear time (a + b at each step would copy the
    growing list, object or string: quadratic, a runaway over a long input)."""
    acc: Any = None
    owned = False  # acc is a list or object made here: it may grow in place
    strs: list[str] | None = None  # a run of strings, joined when it ends
    for x in xs:
        if strs is not None:
            if type(x) is str:
                strs.append(x)
                continue
            if x is None:
                continue
            acc, strs = "".join(strs), None
        if type(acc) is str and type(x) is str:
            strs = [acc, x]
        elif type(acc) is list and type(x) is list:
            if not owned:
                acc, owned = list(acc), True
            acc.extend(x)
        elif type(acc) is dict and type(x) is dict:
            if not owned:
                acc, owned = dict(acc), True
            acc.update(x)
        else:
            acc, owned = add_values(acc, x), False
    return "".join(strs) if strs is not None else acc


# Regular expressions libjq (Oniguruma, Perl syntax) and Python's `re` read alike: literal text,
# classes, anchors, alternation, groups and quantifiers, no escapes but of punctuation.
_SAFE_REGEX = re.compile(r"(?:[A-Za-z0-9 _:/,'^$.*+?|()\[\]-]|\\[.\-/()\[\]*+?|^$])*\Z")


def _regex(node: Node) -> re.Pattern[str]:
    if node.kind != "string" or not _SAFE_REGEX.match(node.value) or "(?" in node.value:
        raise Unsupported("a regular expression beyond the shared syntax")
    try:
        return re.compile(node.value)
    except re.error:
        raise Unsupported("a regular expression Python reads differently") from None


def _call(n: Node) -> Fn:
    name = n.value
    if name == "test" and len(n.children) == 1:
        rx = _regex(n.children[0])

        def test(v: Any, env: Env) -> list[Any]:
            if type(v) is not str:
                raise JqError
            return [rx.search(v) is not None]

        return test
    if name == "gsub" and len(n.children) == 2 and n.children[1].kind == "string":
        rx, repl = _regex(n.children[0]), n.children[1].value
        if rx.search("") is not None:
            raise Unsupported("a pattern that matches the empty string")  # engines step over those differently
        repl = repl.replace("\\", "\\\\")

        def gsub(v: Any, env: Env) -> list[Any]:
            if type(v) is not str:
                raise Fallback
            return [rx.sub(repl, v)]

        return gsub
    args = [compile_node(a) for a in n.children]
    if not args:
        f0 = _ZERO.get(name)
        if f0 is None:
            raise Unsupported(name)
        return lambda v, env: f0(v)
    if len(args) == 1:
        (a,) = args
        if name == "select":
            return lambda v, env: [v for c in a(v, env) if _truthy(c)]
        if name == "map":
            return lambda v, env: [[y for x in _iterate(v) for y in a(x, env)]]
        if name == "map_values":
            raise Unsupported(name)
        if name in ("any", "all"):
            want = name == "any"

            def quantifier(v: Any, env: Env) -> list[Any]:
                for x in _iterate(v):
                    if any(_truthy(c) == want for c in a(x, env)):
                        return [want]
                return [not want]

            return quantifier
        if name == "first":

            def first(v: Any, env: Env) -> list[Any]:
                out = a(v, env)
                return out[:1]

            return first
        if name in ("has", "contains", "startswith", "endswith", "ltrimstr", "rtrimstr", "split", "join", "error"):
            return _unary_arg(name, a)
        if name in ("sort_by", "min_by", "max_by", "unique_by", "group_by"):
            return _by(name, a)
        if name == "IN":  # def IN(s): any(s == .; .)
            return lambda v, env: [any(_eq(x, v) for x in a(v, env))]
        if name == "with_entries":
            return lambda v, env: [_from_entries([y for x in _entries(v) for y in a(x, env)])]
        raise Unsupported(name)
    if len(args) == 2:
        if name == "limit":
            cnt, body = args

            def limit(v: Any, env: Env) -> list[Any]:
                m = _single(cnt, v, env)
                if not _num(m) or m < 0:
                    raise Fallback
                return body(v, env)[: int(m)] if m > 0 else []

            return limit
        if name == "IN":  # def IN(src; s): any(src == s; .)
            src, sset = args
            return lambda v, env: [any(_eq(x, y) for y in sset(v, env) for x in src(v, env))]
        if name in ("any", "all"):
            gen, cond = args
            want = name == "any"

            def quantifier2(v: Any, env: Env) -> list[Any]:
                for x in gen(v, env):
                    if any(_truthy(c) == want for c in cond(x, env)):
                        return [want]
                return [not want]

            return quantifier2
    raise Unsupported(f"{name}/{len(args)}")


def _unary_arg(name: str, a: Fn) -> Fn:
    def run(v: Any, env: Env) -> list[Any]:
        out = []
        for x in a(v, env):
            out.append(_apply(name, v, x))
        return out

    return run


def _apply(name: str, v: Any, x: Any) -> Any:
    if name == "has":
        if type(v) is dict and type(x) is str:
            return x in v
        if type(v) is list and _num(x):
            return 0 <= x < len(v)
        raise Fallback  # `null | has(k)` is false to libjq: its rules for the odd cases
    if name == "contains":
        return _contains(v, x)
    if name == "error":
        raise JqError
    if name == "join":
        if type(v) is not list:
            raise Fallback
        xs = v
        if type(x) is not str or not all(type(e) is str for e in xs):
            raise Fallback
        return x.join(xs)
    if type(v) is not str or type(x) is not str:
        if name in ("ltrimstr", "rtrimstr"):
            raise Fallback  # libjq returns some non-strings as they are and fails on others
        raise JqError
    if name == "startswith":
        return v.startswith(x)
    if name == "endswith":
        return v.endswith(x)
    if name == "ltrimstr":
        return v[len(x) :] if x and v.startswith(x) else v
    if name == "rtrimstr":
        return v[: -len(x)] if x and v.endswith(x) else v
    if name == "split":
        if not x:
            raise Fallback
        return v.split(x)
    raise Fallback


def _by(name: str, f: Fn) -> Fn:
    def run(v: Any, env: Env) -> list[Any]:
        xs = _list(v)
        keyed = [(_Key(f(x, env)), x) for x in xs]  # jq sorts by the array of f's outputs
        keyed.sort(key=lambda p: p[0])
        if name == "sort_by":
            return [[x for _, x in keyed]]
        if name == "min_by":
            return [keyed[0][1] if keyed else None]
        if name == "max_by":
            return [keyed[-1][1] if keyed else None]
        groups: list[list[Any]] = []
        last: _Key | None = None
        for key, x in keyed:
            if last is not None and _cmp(last.v, key.v) == 0:
                groups[-1].append(x)
            else:
                groups.append([x])
            last = key
        if name == "group_by":
            return [groups]
        return [[g[0] for g in groups]]  # unique_by

    return run


# -- the program -----------------------------------------------------------------------------


class Program:
    """One compiled expression: `run(value)` gives its outputs, or raises Fallback."""

    __slots__ = ("fn", "text")

    def __init__(self, text: str, fn: Fn):
        self.text, self.fn = text, fn

    def run(self, value: Any, exponents: bool = True) -> list[Any]:
        """`exponents`: the input may hold numbers in exponent form (libjq prints a large
        integral one back as digits): the outputs are then normalised as libjq's would be."""
        out = self.fn(value, {_BUDGET: [BUDGET]})
        if len(out) >= MAX_RESULTS:
            raise Fallback  # libjq's capped run words the error
        return [output_value(x) for x in out] if exponents else out


def why_not(text: str) -> str | None:
    """What keeps an expression off the native path (None: it runs natively)."""
    try:
        compile_node(parse(text))
    except Unsupported as e:
        return f"uses {e.args[0] if e.args else 'an unsupported construct'}"
    except JqParseError as e:
        return f"does not parse: {e}"
    return None


# What generated code (codegen.py) calls, by the names it is generated with.
RUNTIME: dict[str, Any] = {
    "_index": _index,
    "_iterate": _iterate,
    "_walk": _walk,
    "_cmp": _cmp,
    "_arith": _arith,
    "_out": output_value,
    "_num": _num,
    "_raise": _raise,
    "_fallback": _fallback,
    "_bounded": _bounded,
}
