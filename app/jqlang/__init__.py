"""The jq implementation: a gojq-compatible parser, AST checks, and the runtime the engine
evaluates Karta expressions with (native.py and codegen.py: the jq subset as Python on the
parsed object; jqbatch.py: one libjq program per definition for the rest; inputs.py: what an
evaluation reads; values.py: gojq/Go value conversions).

* :func:`parse` -- parse a jq query exactly as gojq 0.12.x does (raises
  :class:`JqParseError` with gojq's message on failure).
* :func:`blacklist_violations` -- the Karta reference's safety blacklist.
* :func:`gojq_compat_warnings` -- constructs that behave differently in gojq
  (upstream engine) and libjq (our engine).
"""

from .errors import JqParseError
from .lint import gojq_compat_warnings
from .nodes import Node, dump, walk
from .parser import parse
from .safety import blacklist_violations

__all__ = [
    "JqParseError",
    "Node",
    "blacklist_violations",
    "dump",
    "gojq_compat_warnings",
    "parse",
    "walk",
]
