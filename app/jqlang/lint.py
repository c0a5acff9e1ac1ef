"""Lint jq queries for constructs that behave differently in gojq and libjq.

Karta definitions are validated and evaluated upstream with gojq (Go library
mode) while this project evaluates them with libjq.  The checks below flag
constructs whose behaviour differs between the two engines.
"""

from __future__ import annotations

from .nodes import Node, walk
from .parser import gojq_json_string

__all__ = ["REGEX_FUNCTIONS", "gojq_compat_warnings"]

# name -> accepted arities whose first argument is a regular expression
REGEX_FUNCTIONS: dict[str, frozenset[int]] = {
    "test": frozenset({1, 2}),
    "match": frozenset({1, 2}),
    "capture": frozenset({1, 2}),
    "scan": frozenset({1, 2}),
    "splits": frozenset({1, 2}),
    "split": frozenset({2}),  # split/1 splits on a literal string
    "sub": frozenset({2, 3}),
    "gsub": frozenset({2, 3}),
}

_CALL_WARNINGS: dict[tuple[str, int], str] = {
    ("keys_unsorted", 0): "'keys_unsorted' is not defined in gojq (the upstream engine); use 'keys'",
    ("input_line_number", 0): "'input_line_number' is not defined in gojq (the upstream engine)",
    ("get_search_list", 0): "'get_search_list' is not defined in gojq (the upstream engine)",
    ("input", 0): (
        "'input' reads further inputs, which the upstream engine (gojq library mode) does not "
        "provide, so it fails there; a definition query only sees the object it is applied to"
    ),
    ("inputs", 0): (
        "'inputs' reads further inputs, which the upstream engine (gojq library mode) does not "
        "provide, so it fails there; a definition query only sees the object it is applied to"
    ),
    ("env", 0): (
        "'env' is empty in the upstream engine (gojq library mode) and is shadowed here; "
        "do not depend on environment variables"
    ),
    ("now", 0): (
        "'now' is time-dependent, so results change between evaluations and can differ "
        "between gojq (the upstream engine) and this engine"
    ),
}

_VAR_WARNINGS: dict[str, str] = {
    "$__loc__": ("'$__loc__' is not supported by gojq 0.12 (the upstream engine); the query fails to compile there"),
    "$ENV": (
        "'$ENV' is empty in the upstream engine (gojq library mode) and is shadowed here; "
        "do not depend on environment variables"
    ),
}

_LOOKAROUND = (
    ("(?<=", "look-behind"),
    ("(?<!", "negative look-behind"),
    ("(?=", "look-ahead"),
    ("(?!", "negative look-ahead"),
)


def _regex_problems(rx: str) -> list[tuple[str, str]]:
    """Constructs of an Oniguruma regex that Go's RE2-based regexp rejects."""
    found: list[tuple[str, str]] = []
    i, n = 0, len(rx)
    in_class = False
    while i < n:
        c = rx[i]
        if c == "\\":
            if not in_class and i + 1 < n:
                d = rx[i + 1]
                if "1" <= d <= "9":
                    found.append(("backreference", "\\" + d))
                elif d == "k" and rx.startswith("<", i + 2):
                    found.append(("named backreference", "\\k<"))
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            i += 1
            if i < n and rx[i] == "^":
                i += 1
            if i < n and rx[i] == "]":
                i += 1
            continue
        if c == "(" and rx.startswith("(?", i):
            for token, what in _LOOKAROUND:
                if rx.startswith(token, i):
                    found.append((what, token))
                    break
        i += 1
    return found


def _regex_literal(arg: Node) -> Node | None:
    while arg.kind == "paren":
        arg = arg.children[0]
    if arg.kind == "string":
        return arg
    if arg.kind == "array" and arg.children:
        first = arg.children[0]
        while first.kind == "binop" and first.value == ",":
            first = first.children[0]
        while first.kind == "paren":
            first = first.children[0]
        if first.kind == "string":
            return first
    return None


def _bound_names(root: Node) -> tuple[set[tuple[str, int]], set[str]]:
    funcs: set[tuple[str, int]] = set()
    variables: set[str] = set()
    for n in walk(root):
        k = n.kind
        if k == "funcdef":
            funcs.add((n.value, len(n.names)))
            for p in n.names:
                if p.startswith("$"):
                    variables.add(p)
                else:
                    funcs.add((p, 0))
        elif k == "pvar":
            variables.add(n.value)
        elif k == "pentry" and n.children[0].kind == "var":
            variables.add(n.children[0].value)
        elif k == "import" and n.names and n.names[0].startswith("$"):
            variables.add(n.names[0])
    return funcs, variables


def gojq_compat_warnings(node: Node | None, src: str | None = None) -> list[str]:
    """Warnings about constructs that behave differently in gojq vs libjq.

    ``node`` is the result of :func:`~app.jqlang.parser.parse`; ``src`` is the
    query text it was parsed from (used to quote regex literals exactly as
    written; optional).  The whole tree is inspected (no blind spots).  Each
    distinct warning is reported once, in walk order.  Calls and variables
    that the query itself defines (``def keys_unsorted: ...;``, ``. as $ENV``)
    are not reported.

    Checked: ``keys_unsorted``, ``$__loc__``, ``input``, ``inputs``,
    ``input_line_number``, ``get_search_list``, ``env``, ``$ENV``, ``now``,
    and literal regular expressions given to ``test``/``match``/``capture``/
    ``scan``/``split/2``/``sub``/``gsub``/``splits`` that use look-around
    (``(?=``, ``(?!``, ``(?<=``, ``(?<!``) or backreferences (``\\1``..``\\9``,
    ``\\k<name>``), which gojq's RE2-based regexp engine rejects.
    """
    if node is None:
        return []
    funcs, variables = _bound_names(node)
    seen: dict[str, None] = {}
    for n in walk(node):
        kind = n.kind
        if kind == "call":
            key = (n.value, len(n.children))
            msg = _CALL_WARNINGS.get(key)
            if msg is not None and key not in funcs:
                seen.setdefault(msg)
            arities = REGEX_FUNCTIONS.get(n.value)
            if arities is not None and key[1] in arities and key not in funcs:
                lit = _regex_literal(n.children[0])
                if lit is not None:
                    problems = _regex_problems(lit.value)
                    if problems:
                        if src is not None and 0 <= lit.start < lit.end <= len(src):
                            shown = src[lit.start : lit.end]
                        else:
                            shown = gojq_json_string(lit.value)
                        for what, token in problems:
                            seen.setdefault(
                                f"regex {shown} passed to '{n.value}' uses {what} '{token}', "
                                "which gojq (the upstream engine, RE2 syntax) rejects"
                            )
        elif kind == "var":
            msg = _VAR_WARNINGS.get(n.value)
            if msg is not None and n.value not in variables:
                seen.setdefault(msg)
    return list(seen)
