"""AST of the jq language as accepted by gojq 0.12.x.

Every syntactic construct is a :class:`Node`.  ``children`` is a fixed-layout
tuple per ``kind`` (optional parts are ``None``); ``subnodes()`` yields the
non-``None`` children in source order, so a generic pre-order walk visits every
sub-expression left to right.

Kinds and their layout (``value`` / ``children`` / ``names``):

==============  =====================  ==============================================
kind            value                  children
==============  =====================  ==============================================
identity        -                      ()                                  ``.``
recurse         -                      ()                                  ``..``
field           name (no dot)          (target,)                           ``.foo``, ``x.foo``
index           -                      (target, key)                       ``.[e]``, ``."s"``
slice           -                      (target, lo|None, hi|None)          ``.[a:b]``
iterate         -                      (target,)                           ``.[]``
optional        -                      (expr,)                             postfix ``?``
null/true/false -                      ()
number          literal text           ()                                  ``1e3``, ``.5``
string          decoded text           ()                                  ``"a\\n"`` (no interpolation)
interp          -                      parts: string nodes and queries     ``"a\\(x)b"``
format          ``@name``              () or (string|interp,)              ``@csv``, ``@sh "..\\(.)"``
var             ``$name``              ()                                  ``$x``, ``$__loc__``, ``$ENV``, ``$m::v``
call            function name          args (arity = len(children))        ``f``, ``f(a; b)``, ``m::f``
paren           -                      (query,)                            ``(e)``
array           -                      () or (query,)                      ``[]``, ``[e]``
object          -                      entries                             ``{...}``
entry           -                      (key, value|None)                   object entry; value None = ``{a}``
objkey          key text               ()                                  ``a``/``if`` key of an entry/pentry
unary           ``-`` or ``+``         (operand,)                          ``-x``
binop           operator text          (left, right)                       ``| , // or and == != < <= > >= + - * / %``
update          operator text          (left, right)                       ``= |= += -= *= /= %= //=``
bind            -                      (source, pattern..., body)          ``src as $x ?// [$y] | body``
label           ``$name``              (body,)                             ``label $x | body``
break           ``$name``              ()                                  ``break $x``
try             -                      (body, catch|None)                  ``try b catch c``
if              -                      (cond, then, (cond, then)*, else|None)
reduce          -                      (source, pattern, init, update)
foreach         -                      (source, pattern, init, update, extract|None)
funcdef         function name          (body, rest|None); names = params   ``def f(a; $b): body; rest``
pvar            ``$name``              ()                                  pattern ``$x``
parray          -                      patterns                            pattern ``[$a, $b]``
pobject         -                      pentries                            pattern ``{a: $x, $y}``
pentry          -                      (key, pattern|None)                 key: objkey/var/string/interp/paren
module          -                      (meta, rest|None)                   ``module {...};``
import          path                   (meta|None, rest|None); names=(alias,)
include         path                   (meta|None, rest|None)
==============  =====================  ==============================================

``rest`` is ``None`` when a program consists only of directives and/or
function definitions (gojq then evaluates ``.``).  An empty program parses
to a single ``identity`` node.  Object-entry keys are ``objkey`` (identifier
or keyword), ``var`` (``{$x}``), ``string``/``interp`` or ``paren``
(``{(e): v}``).  Object values (``{a: x | y}``) are terms joined by ``binop |``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PATTERN_KINDS", "Node", "dump", "walk"]

PATTERN_KINDS = frozenset({"pvar", "parray", "pobject", "pentry"})


@dataclass(slots=True, repr=False)
class Node:
    kind: str
    value: Any = None
    children: tuple = ()
    names: tuple = ()
    start: int = field(default=0, compare=False)
    end: int = field(default=0, compare=False)

    def subnodes(self) -> Iterator[Node]:
        """Non-``None`` children in source order."""
        for c in self.children:
            if c is not None:
                yield c

    @property
    def name(self) -> Any:
        """Alias of ``value`` (function / variable / label name)."""
        return self.value

    @property
    def arity(self) -> int:
        """Number of arguments of a ``call`` (or parameters of a ``funcdef``)."""
        if self.kind == "funcdef":
            return len(self.names)
        return len(self.children)

    def __repr__(self) -> str:
        return dump(self)


def walk(node: Node | None) -> Iterator[Node]:
    """Pre-order (outer before inner, left to right) traversal of every node."""
    if node is None:
        return
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        n = pop()
        yield n
        ch = [c for c in n.children if c is not None]
        ch.reverse()
        push(ch)


def dump(node: Node | None) -> str:
    """Compact S-expression rendering, e.g. ``(binop | (field a (identity)) (call f))``."""
    if node is None:
        return "_"
    parts = [node.kind]
    if node.value is not None:
        v = node.value
        parts.append(repr(v) if node.kind in ("string", "import", "include") else str(v))
    if node.names:
        parts.append("[" + " ".join(node.names) + "]")
    parts.extend(dump(c) for c in node.children)
    return "(" + " ".join(parts) + ")"
