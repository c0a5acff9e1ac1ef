"""Many jq expressions, one libjq program, one parse of the input.

The `jq` package re-parses its input text on every run, and parsing dominates the cost, so all
expressions that read the same input are compiled into ONE program:

    <prelude> (try [limit(1000; (e1))] catch {"__e": .}), (try ...), ...

Each output is an array of one expression's outputs (at most 1000, the reference's cap) or an
error object, so one failing expression never hides the others - and because results are kept
per expression, the reference's short-circuit rules are applied afterwards in Python.  The
outputs are read lazily, one per expression, so a supervisor can tell WHICH expression is
running when an evaluation overruns its deadline (`progress`); measured to cost the same as
one array output.

The prelude shadows what must not leak or differ from upstream's gojq library mode:
`env`/`$ENV` (the process environment!), `input`/`inputs` (would read the NEXT pod of a
multi-document input), `halt*`, and `debug`/`stderr` (log noise).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import jq

from .codegen import compile_expression
from .errors import JqParseError
from .inputs import Input
from .native import Fallback, Program
from .nodes import walk
from .parser import parse

# Expressions the native evaluator covers run in Python on the parsed input (native.py); the
# rest, and any input the native code cannot answer exactly, go through libjq as below.
NATIVE = os.environ.get("WLMAP_NATIVE_EVAL", "true").lower() not in ("0", "false", "no", "off")

MAX_RESULTS = 1000  # the reference runner's default; 1000 outputs is already an error

# gojq prints numbers with Go's 'f' format inside [1e-6, 1e21) and 'e' (e-7, e+21) outside,
# serialises objects with sorted keys, and iterates object keys sorted.  libjq prints computed
# numbers like %.17g, keeps literal text, and keeps insertion order.  These shadows make
# `tostring`, `tojson` and `to_entries` answer as gojq does.  (Defined before they are
# shadowed, `tostring` inside refers to libjq's builtin.)
_GOJQ_COMPAT = r"""
def _gojq_num:
  if . == 0 then "0" else
  (if . < 0 then "-" else "" end) as $sign | (if . < 0 then 0 - . else . + 0 end) as $x
  | ($x | tostring) as $s
  | if $x >= 1e21 or $x < 1e-6 then $s | sub("e(?<s>[-+])0*(?<d>[0-9])"; "e\(.s)\(.d)")
    elif ($s | test("e")) then
      ($s | capture("^(?<m>[0-9.]+)e(?<e>[-+][0-9]+)$")) as $c
      | ($c.m | split(".")) as $p | ($p[0] + ($p[1] // "")) as $digits
      | (($p[0] | length) + ($c.e | tonumber)) as $point
      | if $point <= 0 then "0." + ("0" * (0 - $point)) + $digits
        elif $point >= ($digits | length) then $digits + ("0" * ($point - ($digits | length)))
        else $digits[:$point] + "." + $digits[$point:] end
    else $s end
  | $sign + . end;
def _gojq_json:
  if type == "object" then "{" + ([keys[] as $k | ($k | @json) + ":" + (.[$k] | _gojq_json)] | join(",")) + "}"
  elif type == "array" then "[" + (map(_gojq_json) | join(",")) + "]"
  elif type == "number" then _gojq_num
  else @json end;
def tojson: _gojq_json;
def tostring: if type == "string" then . else _gojq_json end;
def to_entries: [keys[] as $k | {key: $k, value: .[$k]}];
def _gojq_iter: if type == "object" then (keys[] as $k | .[$k]) else .[] end;
"""

PRELUDE = (
    _GOJQ_COMPAT.replace("\n", " ").strip() + " "
    "def env: {}; "
    'def input: error("input is not allowed"); def inputs: error("inputs is not allowed"); '
    'def halt: error("halt is not allowed"); def halt_error: error(.); def halt_error($c): error(.); '
    "def debug: .; def debug(m): .; def stderr: .; def input_filename: null; "
    "{} as $ENV | "
)

_NOT_DEFINED = re.compile(r"(\$?[A-Za-z_][A-Za-z0-9_:]*(?:/\d+)?) is not defined")

# Functions that libjq has and gojq (the upstream engine) does not: a compile error upstream.
GOJQ_UNDEFINED = {
    "keys_unsorted/0",
    "input_line_number/0",
    "get_search_list/0",
    "$__loc__",
    "get_prog_origin/0",
    "get_jq_origin/0",
    "have_decnum/0",
    "have_literal_numbers/0",
}


@dataclass(slots=True)  # not frozen: a frozen init costs twice as much, and there is one per expression
class Result:
    """All outputs of one expression, or the reference's error text for it (never changed once
    made: results are shared through the results cache)."""

    values: list[Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def sorted_iteration(expr: str) -> str:
    """Rewrite `X[]` as `(X|_gojq_iter)`: iterating an object walks its keys sorted, as gojq
    does.  (Input objects are fed with sorted keys already; this covers objects an expression
    builds itself.)"""
    try:
        ast = parse(expr)
    except JqParseError:
        return expr
    edits: list[tuple[int, int, str]] = []
    for n in walk(ast):
        if n.kind == "iterate":
            target = n.children[0]
            edits.append((target.start, target.start, "("))
            edits.append((target.end, n.end, "|_gojq_iter)"))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        expr = expr[:start] + text + expr[end:]
    return expr


def _wrap(expr: str) -> str:
    return f'(try [limit({MAX_RESULTS}; ({sorted_iteration(expr)}\n))] catch {{"__e": .}})'


def compile_error_text(message: str) -> str:
    """libjq's compile message, worded as gojq's (`function not defined: gpu/0`)."""
    m = _NOT_DEFINED.search(message)
    if m:
        name = m.group(1)
        return f"variable not defined: {name}" if name.startswith("$") else f"function not defined: {name}"
    first = message.strip().splitlines()[0] if message.strip() else message
    return re.sub(r"^jq: error: ", "", first).replace(" at <top-level>, line 1:", "").strip()


_ITERATE = re.compile(r"^Cannot iterate over (\w+)(?: \((.*)\))?$", re.S)


def _error_text(v: Any) -> str:
    """libjq's run-time message; the commonest one reworded as gojq says it."""
    from .values import gojq_tostring

    if not isinstance(v, str):
        return gojq_tostring(v)
    m = _ITERATE.match(v)
    if m:
        kind, value = m.groups()
        return "cannot iterate over: null" if kind == "null" else f"cannot iterate over: {kind} ({value})"
    return v


class Batch:
    """Compiled once; `run(text)` evaluates every expression over one JSON input.

    Two programs: the fast one streams each expression's outputs (`[v]` per output, an error
    object, then `null` at the end of each expression) and Python counts them; the capped one
    wraps every expression in `limit(1000; ...)` and is used only when an expression reaches
    the cap (`limit` costs ~15% on every run, and streaming cannot skip the rest of a runaway
    generator).  Both yield the same results."""

    def __init__(self, texts: list[str], forced_errors: dict[int, str] | None = None):
        self.texts = list(texts)
        # index -> compile error text (reference wording); those elements become constants
        self.compile_errors: dict[int, str] = dict(forced_errors or {})
        self._fast, self._capped = self._compile()
        self.native: list[Program | None] = [
            None if i in self.compile_errors else compile_expression(t) for i, t in enumerate(self.texts)
        ]

    def _sources(self) -> tuple[str, str]:
        fast, capped = [], []
        for i, t in enumerate(self.texts):
            if i in self.compile_errors:
                fast.append("null")
                capped.append('{"__c": 0}')
            else:
                body = sorted_iteration(t)
                fast.append(f'(try (({body}\n) | [.]) catch {{"__e": .}}), null')
                capped.append(f'(try [limit({MAX_RESULTS}; ({body}\n))] catch {{"__e": .}})')
        return PRELUDE + ", ".join(fast), PRELUDE + ", ".join(capped)

    def _compile(self) -> tuple[Any, Any]:
        if not self.texts:
            return None, None
        try:
            return tuple(jq.compile(src) for src in self._sources())
        except ValueError:
            pass
        # Find the culprits one by one; the rest still share one program.
        for i, t in enumerate(self.texts):
            if i in self.compile_errors:
                continue
            try:
                jq.compile(PRELUDE + _wrap(t))
            except ValueError as e:
                self.compile_errors[i] = compile_error_text(str(e))
        return tuple(jq.compile(src) for src in self._sources())

    def _result(self, i: int, values: list[Any] | None, error: Any = None) -> Result:
        t = self.texts[i]
        if i in self.compile_errors:
            return Result(None, f"failed to compile JQ expression '{t}': {self.compile_errors[i]}")
        if error is not None:
            return Result(None, f"JQ execution error for expression '{t}': {_error_text(error.get('__e'))}")
        if values is not None and len(values) >= MAX_RESULTS:
            return Result(
                None, f"JQ execution error for expression '{t}': query results exceed the allowed number {MAX_RESULTS}"
            )
        return Result(values)

    def run(self, text: str | Input, progress: Callable[[int], None] | None = None) -> list[Result]:
        """Evaluate every expression over one input (an Input, or JSON text). `progress(i)` is
        called before expression i starts (i == len(texts) when done)."""
        return self.run_many([text], progress)[0] if self.texts else []

    def run_many(
        self, inputs: Sequence[str | Input], progress: Callable[[int], None] | None = None
    ) -> list[list[Result]]:
        """Evaluate every expression over each input: natively where it can, the rest in one
        libjq call."""
        n = len(self.texts)
        if not n or not inputs:
            return [[] for _ in inputs]
        prepared = [x if isinstance(x, Input) else Input.of_text(x) for x in inputs] if NATIVE else None
        if prepared is not None and any(p is not None for p in self.native):
            return self._run_native(prepared, progress)
        return self._run_jq([x.text() if isinstance(x, Input) else x for x in inputs], progress)

    def _run_jq(self, texts: list[str], progress: Callable[[int], None] | None) -> list[list[Result]]:
        rows = self._run_fast(texts, progress)
        return rows if rows is not None else self._run_capped(texts, progress)

    def _run_native(self, inputs: list[Input], progress: Callable[[int], None] | None) -> list[list[Result]]:
        """Native programs on the inputs' values; libjq for the rest (the expressions it does
        not cover, and any input a native program hands back), one libjq run per such input."""
        n = len(self.texts)
        rows: list[list[Result | None]] = []
        pending: list[int] = []  # inputs that need libjq for at least one expression
        for d, inp in enumerate(inputs):
            value, exponents = inp.value, inp.exponents
            row: list[Result | None] = [None] * n
            for i, prog in enumerate(self.native):
                if prog is None:
                    if i in self.compile_errors:
                        row[i] = self._result(i, None)
                    continue
                if progress is not None:
                    progress(i)
                try:
                    row[i] = Result(prog.run(value, exponents))
                except Fallback:
                    pass
            if None in row:
                pending.append(d)
            rows.append(row)
        if pending:
            for d, jq_row in zip(pending, self._run_jq([inputs[d].text() for d in pending], progress), strict=True):
                rows[d] = [r if r is not None else jq_row[i] for i, r in enumerate(rows[d])]
        elif progress is not None:
            progress(n)
        return cast(list[list[Result]], rows)  # every None was filled from libjq's row

    def _run_fast(self, texts: list[str], progress: Callable[[int], None] | None) -> list[list[Result]] | None:
        n = len(self.texts)
        rows: list[list[Result]] = [[] for _ in texts]
        doc = i = 0
        values: list[Any] = []
        error: Any = None
        if progress is not None:
            progress(0)
        for out in self._fast.input_text("\n".join(texts)):
            if out is None:  # end of expression i
                rows[doc].append(self._result(i, values, error))
                values, error = [], None
                i += 1
                if i == n:
                    doc, i = doc + 1, 0
                if progress is not None:
                    progress(n if doc == len(texts) else i)
            elif type(out) is list:
                values.append(out[0])
                if len(values) >= MAX_RESULTS:
                    return None  # possibly a runaway generator: let the capped program decide
            else:
                error = out
        return rows

    def _run_capped(self, texts: list[str], progress: Callable[[int], None] | None) -> list[list[Result]]:
        n = len(self.texts)
        rows: list[list[Result]] = [[] for _ in texts]
        if progress is not None:
            progress(0)
        for k, cell in enumerate(self._capped.input_text("\n".join(texts))):
            doc, i = divmod(k, n)
            if isinstance(cell, list) or i in self.compile_errors:
                rows[doc].append(self._result(i, cell if isinstance(cell, list) else None))
            else:
                rows[doc].append(self._result(i, None, cell))
            if progress is not None:
                progress((i + 1) % n if doc < len(texts) - 1 or i + 1 < n else n)
        return rows
