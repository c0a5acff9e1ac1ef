"""Safety blacklist over the jq AST, mirroring the Karta reference validator.

The reference Go library parses every jq expression of a definition with gojq
and walks the resulting AST; the first blacklisted construct makes the
definition invalid.  :func:`blacklist_violations` reproduces that walk.
"""

from __future__ import annotations

from .nodes import PATTERN_KINDS, Node

__all__ = [
    "EXCESSIVE_OUTPUT_FUNCTIONS",
    "MODIFYING_OPERATORS",
    "STRICT_WRAPPER_FUNCTIONS",
    "blacklist_violations",
]

EXCESSIVE_OUTPUT_FUNCTIONS = frozenset({"range", "paths", "recurse", "walk", "repeat"})
MODIFYING_OPERATORS = frozenset({"=", "|=", "+=", "-=", "*=", "/=", "%=", "//="})

# Builtins that are thin wrappers around blacklisted constructs.  The reference
# only matches exact names, so these are reported in strict mode only.
STRICT_WRAPPER_FUNCTIONS: dict[str, str] = {
    # defined as paths(scalars)
    "leaf_paths": "function 'leaf_paths' may produce excessive output and is not allowed",
    # jq 1.5/1.6 alias of recurse (not defined in gojq)
    "recurse_down": "function 'recurse_down' may produce excessive output and is not allowed",
    # emits one event per leaf path, like paths
    "tostream": "function 'tostream' may produce excessive output and is not allowed",
    # defined as .[] |= f
    "map_values": "function 'map_values' uses modifying operator '|=' and is not allowed",
    # the primitive del(f) is built on
    "delpaths": "function 'delpaths' deletes paths like del and is not allowed",
    # equivalent of the assignment operator
    "setpath": "function 'setpath' modifies its input like '=' and is not allowed",
}

_DEL_MESSAGE = "del function is not allowed"
_RECURSE_MESSAGE = "recursive descent operator '..' is not allowed"


def blacklist_violations(node: Node | None, strict: bool = False) -> list[str]:
    """Return the blacklist violations of a parsed jq query, in walk order.

    The walk is pre-order (an operator / call is reported before anything in
    its operands or arguments) and left to right, i.e. the same order in
    which the reference validator visits the gojq AST.  Every occurrence is
    reported (two ``range`` calls give two entries); the reference stops at
    the first violation, so callers that want its exact verdict should use
    ``violations[0]`` (and treat an empty list as "allowed").

    Reasons (identical to the reference's):

    * ``del function is not allowed`` -- a call to ``del`` (any arity)
    * ``function '<name>' may produce excessive output and is not allowed`` --
      calls named exactly ``range``, ``paths``, ``recurse``, ``walk``, ``repeat``
      (any arity)
    * ``recursive descent operator '..' is not allowed``
    * ``modifying operator '<op>' is not allowed`` -- ``= |= += -= *= /= %= //=``

    With ``strict=False`` the reference's blind spots are mirrored exactly: it
    descends into function definitions (bodies and the query they scope),
    call arguments, parentheses, array/object constructors (keys and values),
    string interpolations (including ``@format "..."`` strings), if/elif/else,
    try/catch, reduce/foreach (source, init, update, extract), index and slice
    bounds, postfix ``?`` and both operands of binary operators -- but it does
    **not** look into ``term as $x | body`` (neither the body nor the
    destructuring patterns), ``label $x | body``, the operand of unary
    ``-``/``+``, or destructuring patterns of reduce/foreach (object-pattern
    keys ``{(expr): $v}`` can hold expressions).  Wrapper builtins such as
    ``leaf_paths`` are not recognised either.

    With ``strict=True`` every sub-expression is visited and the wrapper
    builtins in :data:`STRICT_WRAPPER_FUNCTIONS` (``leaf_paths``,
    ``tostream``, ``map_values``, ``delpaths``, ``setpath``, ``recurse_down``)
    are reported too, so a caller can diff the two results to warn about
    constructs the reference would miss.
    """
    out: list[str] = []
    if node is None:
        return out
    stack = [node]
    pop = stack.pop
    while stack:
        n = pop()
        kind = n.kind
        if kind == "call":
            name = n.value
            if name == "del":
                out.append(_DEL_MESSAGE)
            elif name in EXCESSIVE_OUTPUT_FUNCTIONS:
                out.append(f"function '{name}' may produce excessive output and is not allowed")
            elif strict and name in STRICT_WRAPPER_FUNCTIONS:
                out.append(STRICT_WRAPPER_FUNCTIONS[name])
        elif kind == "recurse":
            out.append(_RECURSE_MESSAGE)
        elif kind == "update":
            out.append(f"modifying operator '{n.value}' is not allowed")
        children = n.children
        if not children:
            continue
        if not strict:
            if kind == "bind":
                children = children[:1]  # the source term only
            elif kind == "label" or kind == "unary" or kind in PATTERN_KINDS:
                continue
            elif kind == "reduce" or kind == "foreach":
                children = (children[0],) + children[2:]  # skip the pattern
        # push in reverse so that the leftmost child is visited first
        for c in reversed(children):
            if c is not None:
                stack.append(c)
    return out
