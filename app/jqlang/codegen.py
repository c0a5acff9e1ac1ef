"""jq expressions as generated Python source: one function per expression, no call per node.

The closures in native.py evaluate a node by calling its children's closures, which costs a
Python call (and often a list) per node.  Here the commonest shapes - paths, `//`, `and`/`or`,
`not`, comparisons, `if`, arithmetic, iteration, pipes, `select`, `map`, `any`/`all`, array and
object construction, `as $x` - become one Python expression, compiled once per expression
text.  Any other node embeds its native.py closure, so the two forms answer alike by
construction: the generated code calls the same helpers (`_index`, `_cmp`, `_iterate`,
`_bounded`, ...) with the same arguments.

Temporaries are assignment expressions (`(_t1 := ...)`), unique per node, so one node's value
is computed once.  Variables bound by `as` are Python locals; an embedded closure gets them in
its env.  Evaluation order only decides WHICH error is raised, and every jq error hands the
expression back alike (or is swallowed alike by `try`), so the order is free.
"""

from __future__ import annotations

from typing import Any

from . import native as nv
from .errors import JqParseError
from .nodes import Node
from .parser import parse

Scope = dict[str, str]  # jq variable -> Python name


class _Gen:
    def __init__(self) -> None:
        self.consts: dict[str, Any] = {}
        self.n = 0
        self.bools: set[str] = set()  # codes that are always a bool: their truthiness is themselves

    def boolean(self, code: str) -> str:
        self.bools.add(code)
        return code

    def tmp(self) -> str:
        self.n += 1
        return f"_t{self.n}"

    def const(self, value: Any) -> str:
        name = f"_k{len(self.consts)}"
        self.consts[name] = value
        return name

    # -- embedding a closure -------------------------------------------------------------

    def _env(self, scope: Scope) -> str:
        if not scope:
            return "env"
        return "{**env, " + ", ".join(f"{k!r}: {p}" for k, p in scope.items()) + "}"

    def closure(self, n: Node, v: str, scope: Scope) -> str:
        """The native closure of `n`, called: a list of outputs."""
        return f"{self.const(nv.compile_node(n))}({v}, {self._env(scope)})"

    # -- the one-output form: a Python expression for the single output, or None ----------

    def over(self, iterable: str) -> tuple[str, str]:
        """(prefix, name) to loop over `iterable`: Python forbids assignment expressions in a
        comprehension's iterable, so one that holds any is computed first, into a name."""
        if ":=" not in iterable:
            return "", iterable
        it = self.tmp()
        return f"({it} := {iterable}), ", it

    def comp(self, elem: str, x: str, iterable: str, cond: str | None = None) -> str:
        """`[elem for x in iterable if cond]`, the iterable computed first."""
        pre, it = self.over(iterable)
        body = f"[{elem} for {x} in {it}" + (f" if {cond}]" if cond else "]")
        return f"({pre}{body})[1]" if pre else body

    def truthy(self, code: str) -> str:
        if code in self.bools:
            return code
        t = self.tmp()
        return f"((({t} := {code}) is not None) and ({t} is not False))"

    def one(self, n: Node, v: str, scope: Scope) -> str | None:
        k = n.kind
        if k == "identity":
            return v
        if k in ("null", "true", "false", "number", "string"):
            return self.const(nv.literal_value(n))
        if k == "paren":
            return self.one(n.children[0], v, scope)
        if k == "var":
            name = n.value
            if name in scope:
                return scope[name]
            if name == "$ENV":
                return "{}"
            if name == "$__loc__" or "::" in name:
                raise nv.Unsupported(name)
            return f"(env[{name!r}] if {name!r} in env else _fallback())"
        if k in ("field", "index"):
            base, keys = nv.path_chain(n)
            if not keys:
                return None
            code = self.one(base, v, scope)
            if code is None:
                return None
            for key in keys:
                if type(key) is str:
                    kc = self.const(key)
                    if code.isidentifier():
                        code = f"({code}.get({kc}) if type({code}) is dict else _index({code}, {kc}))"
                    else:
                        t = self.tmp()
                        code = f"({t}.get({kc}) if type({t} := {code}) is dict else _index({t}, {kc}))"
                else:
                    code = f"_index({code}, {key!r})"
            return code
        if k == "binop":
            return self._binop_one(n, v, scope)
        if k == "if":
            ch = list(n.children)
            if ch[-1] is None or len(ch) % 2 == 0:
                return None
            parts = [self.one(c, v, scope) for c in ch]
            if any(p is None for p in parts):
                return None
            code = parts[-1]
            for i in range(len(ch) - 3, -1, -2):
                code = f"({parts[i + 1]} if {self.truthy(parts[i])} else {code})"  # type: ignore[arg-type]
            return code
        if k == "array":
            if not n.children:
                return "[]"
            code, fresh = self.many(n.children[0], v, scope)
            return code if fresh else f"list({code})"
        if k == "object":
            return self._object(n, v, scope)
        if k == "unary":
            x = self.one(n.children[0], v, scope)
            if x is None:
                return None
            t = self.tmp()
            sign = "-" if n.value == "-" else ""
            return f"({sign}{t} if _num({t} := {x}) else _raise())"
        if k == "bind":
            source, *patterns, body = n.children
            if len(patterns) != 1 or patterns[0].kind != "pvar":
                raise nv.Unsupported("destructuring")
            src = self.one(source, v, scope)
            if src is None:
                return None
            p = self.tmp()
            b = self.one(body, v, {**scope, patterns[0].value: p})
            return None if b is None else f"(({p} := {src}), {b})[1]"
        if k == "call":
            return self._call_one(n, v, scope)
        return None

    def _binop_one(self, n: Node, v: str, scope: Scope) -> str | None:
        op = n.value
        if op == ",":
            return None
        left_node, right_node = n.children
        if op == "|":
            left = self.one(left_node, v, scope)
            if left is None:
                return None
            t = self.tmp()
            right = self.one(right_node, t, scope)
            return None if right is None else f"(({t} := {left}), {right})[1]"
        left, right = self.one(left_node, v, scope), self.one(right_node, v, scope)
        if left is None or right is None:
            return None
        if op == "//":
            t = self.tmp()
            return f"({t} if (({t} := {left}) is not None and {t} is not False) else {right})"
        if op == "and":
            return self.boolean(f"({self.truthy(left)} and {self.truthy(right)})")
        if op == "or":
            return self.boolean(f"({self.truthy(left)} or {self.truthy(right)})")
        if op in ("==", "!="):
            return self.boolean(self._equality(op == "!=", left_node, right_node, left, right))
        if op in ("<", "<=", ">", ">="):
            return self.boolean(f"(_cmp({left}, {right}) {op} 0)")
        if op in ("+", "-", "*", "/", "%"):
            if op == "+":
                return f"_plus({left}, {right})"
            return f"_out(_arith({op!r}, {left}, {right}))"
        return None

    def _equality(self, neg: bool, ln: Node, rn: Node, left: str, right: str) -> str:
        # A literal on one side has a cheaper exact test: Python's == between a str and any
        # other JSON value is jq's, and null/true/false are singletons.  (Numbers are not:
        # Python says False == 0.)
        for lit, other in ((rn, left), (ln, right)):
            lk = lit.kind if lit.kind != "paren" else None
            if lk == "string":
                return f"({other} {'!=' if neg else '=='} {self.const(lit.value)})"
            if lk in ("null", "true", "false"):
                const = {"null": "None", "true": "True", "false": "False"}[lk]
                return f"({other} {'is not' if neg else 'is'} {const})"
        return f"(_cmp({left}, {right}) {'!=' if neg else '=='} 0)"

    def _object(self, n: Node, v: str, scope: Scope) -> str | None:
        items = []
        for e in n.children:
            key, value = e.children
            if key.kind in ("objkey", "string"):
                kc = self.const(key.value)
            elif key.kind == "var" and value is None:
                kc = self.const(key.value[1:])
                value = key  # {$x}: "x": $x
            elif key.kind in ("paren", "interp"):
                if value is None:
                    raise nv.Unsupported("shorthand")
                kcode = self.one(key, v, scope)
                if kcode is None:
                    return None
                t = self.tmp()
                kc = f"({t} if type({t} := {kcode}) is str else _raise())"
            else:
                raise nv.Unsupported(key.kind)
            vcode: str | None
            if value is None:  # {a}: .a
                vcode = f"_index({v}, {kc})"
            else:
                vcode = self.one(value, v, scope)
                if vcode is None:
                    code, _ = self.many(value, v, scope)
                    vcode = f"_only({code})"
            items.append(f"{kc}: {vcode}")
        return "{" + ", ".join(items) + "}"

    def _call_one(self, n: Node, v: str, scope: Scope) -> str | None:
        name, args = n.value, n.children
        if not args:
            if name == "not":
                return self.boolean(f"({v} is None or {v} is False)")
            f1 = nv.ONE_VALUE.get(name)
            return None if f1 is None else f"{self.const(f1)}({v})"
        if name == "map" and len(args) == 1:
            x = self.tmp()
            f = self.one(args[0], x, scope)
            if f is not None:
                return f"[{f} for {x} in _iterate({v})]"
            body, _ = self.many(args[0], x, scope)
            return f"_flat([{body} for {x} in _iterate({v})])"
        if name in ("any", "all") and len(args) == 2:
            gen, _ = self.many(args[0], v, scope)
            x = self.tmp()
            cond = self.one(args[1], x, scope)
            if cond is None:
                return None
            pre, it = self.over(gen)
            quantified = f"{name}({self.truthy(cond)} for {x} in {it})"
            return self.boolean(f"({pre}{quantified})[1]" if pre else quantified)
        return None

    # -- the list form: (a Python expression for the list of outputs, whether it is a new list)

    def many(self, n: Node, v: str, scope: Scope) -> tuple[str, bool]:
        one = self.one(n, v, scope)
        if one is not None:
            return f"[{one}]", True
        k = n.kind
        if k == "paren":
            return self.many(n.children[0], v, scope)
        if k == "iterate":
            target = self.one(n.children[0], v, scope)
            if target is not None:
                return f"_iterate({target})", False
            tl, _ = self.many(n.children[0], v, scope)
            t = self.tmp()
            return f"_flat({self.comp(f'_iterate({t})', t, tl)})", True
        if k in ("field", "index"):
            base, keys = nv.path_chain(n)
            if keys:  # `x.a.b` over a many-valued `x`
                bl, _ = self.many(base, v, scope)
                t = self.tmp()
                return self.comp(f"_walk({t}, {self.const(keys)})", t, bl), True
        if k == "binop" and n.value in ("|", ","):
            left_node, right_node = n.children
            if n.value == ",":
                a, _ = self.many(left_node, v, scope)
                b, _ = self.many(right_node, v, scope)
                return f"({a} + {b})", True
            ll, _ = self.many(left_node, v, scope)
            x = self.tmp()
            if right_node.kind == "call" and right_node.value == "select" and len(right_node.children) == 1:
                cond = self.one(right_node.children[0], x, scope)
                if cond is not None:
                    return self.comp(x, x, ll, self.truthy(cond)), True
            right = self.one(right_node, x, scope)
            if right is not None:
                return self.comp(right, x, ll), True
            rl, _ = self.many(right_node, x, scope)
            # a product of iterations: counted against the evaluation's budget
            return f"_bounded(_flat({self.comp(rl, x, ll)}), env)", True
        if k == "bind":
            source, *patterns, body = n.children
            if len(patterns) != 1 or patterns[0].kind != "pvar":
                raise nv.Unsupported("destructuring")
            sl, _ = self.many(source, v, scope)
            p = self.tmp()
            bl, _ = self.many(body, v, {**scope, patterns[0].value: p})
            return f"_bounded(_flat({self.comp(bl, p, sl)}), env)", True
        if k == "binop" and n.value == "//":
            ll, _ = self.many(n.children[0], v, scope)
            rl, _ = self.many(n.children[1], v, scope)
            g, x = self.tmp(), self.tmp()
            kept = self.comp(x, x, ll, f"{x} is not None and {x} is not False")
            return f"({g} if ({g} := {kept}) else {rl})", True
        if k == "call" and n.value == "select" and len(n.children) == 1:
            cond = self.one(n.children[0], v, scope)
            if cond is not None:
                return f"([{v}] if {self.truthy(cond)} else [])", True
        return self.closure(n, v, scope), True


def _plus(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        s = a + b
        if -(2**53) < s < 2**53:
            return s
    return nv.output_value(nv.add_values(a, b))


def _flat(lists: list[list[Any]]) -> list[Any]:
    return [y for xs in lists for y in xs]


def _only(out: list[Any]) -> Any:
    if len(out) != 1:
        raise nv.Fallback  # a multi-valued (or empty) value: libjq's cartesian rules
    return out[0]


def generate(tree: Node) -> tuple[str, nv.Fn]:
    """The source of `tree` as one Python function `(value, env) -> outputs`, and the function.
    Raises native.Unsupported when the expression is outside the subset."""
    g = _Gen()
    body, _ = g.many(tree, "v", {})
    source = f"def _expression(v, env):\n    return {body}\n"
    namespace: dict[str, Any] = {**nv.RUNTIME, "_plus": _plus, "_only": _only, "_flat": _flat, **g.consts}
    exec(compile(source, "<jq expression>", "exec"), namespace)
    return source, namespace["_expression"]


def compile_expression(text: str) -> nv.Program | None:
    """The native form of an expression (generated Python), or None when it is outside the
    subset (the closures' subset: generated code embeds them)."""
    try:
        tree = parse(text)
        closure = nv.compile_node(tree)
    except (nv.Unsupported, JqParseError, RecursionError):
        return None
    try:
        return nv.Program(text, generate(tree)[1])
    except (SyntaxError, RecursionError, MemoryError):  # nested beyond what Python's parser takes
        return nv.Program(text, closure)
