"""Which builtins an expression calls (functions it does not define itself) and which
special variables it reads - used to reproduce gojq's compile errors for libjq-only names."""

from __future__ import annotations

from .nodes import Node, walk


def called_functions(node: Node) -> set[str]:
    """`name/arity` of every call not defined by a `def` in the expression, plus `$__loc__`."""
    defined = {f"{n.value}/{len(n.names)}" for n in walk(node) if n.kind == "funcdef"}
    out: set[str] = set()
    for n in walk(node):
        if n.kind == "call":
            sig = f"{n.value}/{len(n.children)}"
            if sig not in defined:
                out.add(sig)
        elif n.kind == "var" and n.value == "$__loc__":
            out.add("$__loc__")
    return out
