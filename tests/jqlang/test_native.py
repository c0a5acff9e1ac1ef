"""The native evaluator (app/jqlang/native.py) answers exactly as the libjq path does, or hands
the expression back: every catalog expression on every fixture, gojq's semantics case by case,
and random objects and expressions from the covered subset against libjq and gojq."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.options import EngineOptions
from app.jqlang import codegen, jqbatch, native
from app.engine.compiled import _forced_compile_errors, compiled, expression_texts
from app.jqlang.inputs import Input, input_text, prepare
from app.engine.interpret import InterpretationError, interpret
from app.jqlang.paths import project
from app.karta.load import load_builtin
from tests.properties import at_least

ROOT = Path(__file__).resolve().parents[2]


def libjq(expr: str, value: Any) -> jqbatch.Result:
    """The libjq path alone (as before the native evaluator)."""
    b = jqbatch.Batch([expr], _forced_compile_errors([expr]))
    return b._run_jq([input_text(value, False)], None)[0][0]


def natively(expr: str, value: Any) -> list[Any] | None:
    """The native answer, or None when it hands the expression (or this input) back.  The input
    is prepared as the engine prepares it: the value itself, or parsed text when it holds an
    integral float."""
    prog = codegen.compile_expression(expr)
    if prog is None:
        return None
    inp = prepare(value, False)
    try:
        return prog.run(inp.value, inp.exponents)
    except native.Fallback:
        return None


def same(expr: str, value: Any) -> list[Any] | None:
    got, want = natively(expr, value), libjq(expr, value)
    if got is not None:
        assert want.ok, (expr, value, got, want.error)
        # the same values, numbers typed alike (3, not 3.0); objects keep the input's key order
        assert got == want.values and json.dumps(got, sort_keys=True) == json.dumps(want.values, sort_keys=True), \
            (expr, value, got, want.values)
    return got


# -- the catalog ---------------------------------------------------------------------------

def _fixtures(d: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    g, v, k = d.gvk
    objs: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for f in sorted((ROOT / "definitions" / (g or "core") / k / v / "testdata").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == k:
                objs.append(doc)
            elif isinstance(doc.get("object"), dict):
                objs.append(doc["object"])
            if doc.get("kind") == "Pod":
                pods.append(doc)
            pods += [p for p in doc.get("pods") or [] if isinstance(p, dict)] if isinstance(doc.get("pods"), list) else []
    return objs, pods


def test_every_catalog_expression_on_every_fixture_agrees() -> None:
    evaluated = handed_back = 0
    not_covered: set[str] = set()
    for d in load_builtin():
        assert d.valid, (d.name, d.findings)
        cd = compiled(d)
        objs, pods = _fixtures(d)
        w, p = expression_texts(d)
        for texts, inputs, proj in ((w, objs, cd.projection), (p, pods, True)):
            if not texts or not inputs:
                continue
            batch = jqbatch.Batch(texts, _forced_compile_errors(texts))
            for obj in inputs:
                strip = cd.strip_noise if proj is not True else True
                text = input_text(obj, strip, proj)
                want = batch._run_jq([text], None)[0]
                # What native programs read of the object (the whole interpretation, which reads
                # the object itself, is compared below)
                inp = prepare(project(obj, proj) if proj is not True else obj, strip, proj)
                got = batch._run_native([inp], None)[0]  # natively where it can, libjq for the rest
                assert [(r.values, r.error) for r in got] == [(r.values, r.error) for r in want], d.name
                value = inp.value
                for i, prog in enumerate(batch.native):
                    if prog is None:
                        if i not in batch.compile_errors:
                            not_covered.add(texts[i])
                        continue
                    try:
                        prog.run(value, inp.exponents)
                        evaluated += 1
                    except native.Fallback:
                        handed_back += 1
    # Nearly everything runs natively; what does not is named (user functions, `match`).
    assert evaluated > 5000 and handed_back < evaluated / 100, (evaluated, handed_back)
    assert all(native.why_not(t) for t in not_covered)
    # the Spark family's `def bytes` (SparkApplication, ScheduledSparkApplication, SparkConnect)
    assert len(not_covered) <= 5 and all(t.lstrip().startswith("def ") for t in not_covered), sorted(not_covered)
    print(f"{evaluated} natively, {handed_back} handed back, {len(not_covered)} expressions not covered")


UNCACHED = EngineOptions(jq_results=None)  # every call evaluates its expressions


def _interpretation(obj: dict[str, Any], d: Any, pods: list[dict[str, Any]]) -> Any:
    try:
        return orjson.dumps(interpret(obj, d, pods, options=UNCACHED), option=orjson.OPT_SORT_KEYS)
    except InterpretationError as e:
        return e.title, e.errors


def test_every_catalog_fixture_interprets_alike_natively_and_through_libjq(monkeypatch: pytest.MonkeyPatch) -> None:
    """Native programs read the object itself (pod templates whole, not projected): the
    interpretation, with pods, must still be the libjq path's to the byte."""
    compared = 0
    for d in load_builtin():
        assert d.valid, (d.name, d.findings)
        objs, pods = _fixtures(d)
        for obj in objs:
            got = _interpretation(obj, d, pods)
            monkeypatch.setattr(jqbatch, "NATIVE", False)
            want = _interpretation(obj, d, pods)
            monkeypatch.setattr(jqbatch, "NATIVE", True)
            assert got == want, (d.name, (obj.get("metadata") or {}).get("name"))
            compared += 1
    assert compared > 300, compared


# -- gojq semantics, case by case ----------------------------------------------------------

OBJ = {"a": {"b": [1, 2.5, None, "x"], "c": {"z": 1, "y": 2}}, "s": "Hello-World", "n": 0, "t": True, "f": False,
       "e": [], "o": {}, "big": 12345678901, "neg": -3, "conds": [{"type": "Ready", "status": "True"},
                                                                  {"type": "Failed", "status": "False"}]}

CASES = [
    ".missing", ".missing.deeper", ".a.b[1]", ".a.b[-1]", ".a.b[10]", ".a.b[1:3]", ".a.c[]", "[.a.c[]]",
    ".a | keys", ".a.c | to_entries", ".a.c | with_entries(.value += 1)", "[.conds[] | select(.type == \"Ready\")]",
    ".conds | map(.status)", "[.a.b[] | tostring]", "1.0, 2.50, 1e3, 1.5e300 | tostring", "[.n, .t, .f, null] | map(not)",
    ".missing // \"d\"", ".f // .t", "(.a.b[] // 0)", "[.a.b[] | numbers]", ".a.b | length", ".s | length",
    ".missing | length", ".neg | length", "[.a, .e, .o, .s] | map(length)", ".a.b[0] == 1.0", "1 == 1.0",
    "[null, false, true, 0, \"\", [], {}] | sort", "[3, 1, 2] | sort_by(-.)", ".conds | min_by(.type) | .type",
    "[.conds[] | .type] | join(\",\")", ".s | test(\"^Hello\")", ".s | ascii_downcase | gsub(\"[^a-z]\"; \"\")",
    ".s | startswith(\"Hel\"), endswith(\"ld\"), ltrimstr(\"Hello\"), rtrimstr(\"World\")", ".s | split(\"-\")",
    "any(.conds[]; .status == \"True\")", "all(.conds[]; .status == \"True\")", ".conds | any(.type == \"Failed\")",
    "[.conds[].type] | IN([\"Ready\"], [\"Failed\"])", ".conds[0].type | IN(\"Ready\", \"Other\")",
    "if .t then \"yes\" elif .f then \"no\" else \"none\" end", "if .missing then 1 end",
    "{a: .n, \"b\": .s, (.s): 1, c: [.a.b[]]}", "\"n=\\(.n) t=\\(.t) o=\\(.a.c)\"", ".a.b[0] + 1, .s + \"!\", .e + [1]",
    "{} + .o + {x: 1}", "10 / 4, 10 % 3, 7 - 2, 3 * 4", ".big * 1000", "(.a.b[0] + .a.b[1]) | floor, ceil",
    ".conds as $c | $c | length", "reduce .a.b[] as $x (0; . + ($x | numbers // 0))", "[limit(2; .a.b[])]",
    "first(.conds[]) | .type", ".a.b | first, last", ".conds | unique_by(.status) | length",
    ".a.b | add", "[.a.c | .[]] | add", "try error(\"x\")", "[.a.b[] | (. + 1)?]", ".a.b[]? // \"none\"",
    ".s | tonumber?", "\"12\" | tonumber", ".t and .f, .t or .f, (.t, .f) and .t", "[.[] | type]",
    ".a.c | has(\"z\"), has(\"q\")", ".a.b | contains([1])", ".s | contains(\"World\")", "$ENV, env",
    ".a.b | map(values)", "[.conds[] | .type as $t | {t: $t}]", ".a.c | keys | length",
    ".neg, -.neg, (.a.b[1] | -.)", "[.a.c[] | . * 2]", "[.[] | scalars]", "[.[] | iterables] | length",
    ".missing[]?", "[.missing[]?]", ".n | .[0]?", "(.a.b | .[1:]) | length",
    "[.s.x?]", "[.s?.x?]", "[.a.b[]?.x?]", "[.n[]?]", "[(.s | keys)[0]?]?",
]


@pytest.mark.parametrize("expr", CASES)
def test_case_agrees_with_libjq(expr: str) -> None:
    same(expr, OBJ)


def test_the_cases_run_natively() -> None:
    """The cases above are the subset: each runs natively (none is handed back whole)."""
    handed = [e for e in CASES if natively(e, OBJ) is None]
    assert len(handed) <= 6, handed  # e.g. errors with partial outputs, which libjq words


@pytest.mark.parametrize("expr", ["def f: 1; f", ".. | numbers", "[range(5)]", "until(. > 3; . + 1)",
                                  "[repeat(1)] | length", "input", "now", "@base64", ".a |= 1", "$__loc__",
                                  "[.[] as [$a] | $a]", "label $out | 1", "try error catch .", "match(\"a\")",
                                  "test(\"\\\\d\")", "test(\"(?i)a\")", "gsub(\"a*\"; \"\")"])
def test_outside_the_subset_is_handed_back_whole(expr: str) -> None:
    assert codegen.compile_expression(expr) is None and native.why_not(expr)


@pytest.mark.parametrize("expr,value", [
    (".a.b", {"a": "text"}),            # index a string: libjq words the error
    (".[]", None),                      # iterate null
    ("[.[] | .x]", [1, 2]),             # index numbers
    ("(1, error(\"x\"), 2) // 3", None),  # jq keeps what came before the error
    ("[.[] | tostring] | join(1)", [1]),
    ("[range(2000)] | .[]", None),
    (".[] ", [1] * 1000),               # the 1,000-output cap: libjq's capped run words it
    ("({k: ((., .x.a))})?", {"a": None, "x": []}),  # one object made before the entry's error
    ("any({k: ((., .b))})?", [[1]]),
    ('("\\(1, error)")?', 1),           # one string interpolated before the error
    ("{(.a, .b): 1}?", {"a": "x", "b": 2}),
])
def test_what_it_cannot_vouch_for_goes_to_libjq(expr: str, value: Any) -> None:
    assert natively(expr, value) is None
    b = jqbatch.Batch([expr])
    text = input_text(value, False)
    assert [(r.values, r.error) for r in b._run_native([Input.of_text(text)], None)[0]] == \
        [(r.values, r.error) for r in b._run_jq([text], None)[0]]


def test_numbers_come_back_as_libjq_prints_them() -> None:
    for expr, value in ((".x * 2", {"x": 1.5}), (".x / 2", {"x": 4}), (".x + 0.5", {"x": 2.5}), ("4 / 2", None),
                        ("add", [0.5, 0.5]), ("[.[] | . + 0.25] | add", [0.25, 0.25])):
        got = same(expr, value)
        assert got is not None and [type(x) for x in got] == [type(x) for x in libjq(expr, value).values]


def test_native_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    b = jqbatch.Batch([".a"])
    calls: list[int] = []
    monkeypatch.setattr(jqbatch.Batch, "_run_native", lambda self, t, p: calls.append(1) or [])
    monkeypatch.setattr(jqbatch, "NATIVE", False)
    assert b.run('{"a": 1}')[0].values == [1] and not calls


# -- random objects and expressions --------------------------------------------------------

keys = st.sampled_from(["a", "b", "name", "type", "status", "x"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, -2.25, 3.0, 1e3]),
                    st.sampled_from(["", "a", "True", "Ready", "b-c"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(keys, inner, max_size=3)), max_leaves=8)

paths = st.lists(keys, min_size=1, max_size=3).map(lambda ks: "." + ".".join(ks))
atoms = st.one_of(paths, st.sampled_from([".", "null", "true", "1", "\"a\"", "[]", "{}", ".[]?", "length",
                                          "tostring", "type", "keys?", "not", "to_entries?", "add", "first", "last",
                                          "reverse", "sort", "min", "unique", "has(\"a\")", "startswith(\"a\")",
                                          "ltrimstr(\"a\")", "test(\"a\")", "contains(\"a\")", "tonumber",
                                          "split(\"-\")", "join(\",\")", "floor", "-.", ".[0]", ".[\"a\"]", "any",
                                          "all", "from_entries", "with_entries(.)", "IN(1, \"a\")", "ascii_downcase",
                                          "tojson", "map(type)", "sort_by(type)", "keys[0]?", ".[1:]"]))


def _expr(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(children, children)
    return st.one_of(
        two.map(lambda p: f"({p[0]} | {p[1]})"), two.map(lambda p: f"({p[0]} // {p[1]})"),
        two.map(lambda p: f"({p[0]} == {p[1]})"), two.map(lambda p: f"({p[0]} < {p[1]})"),
        two.map(lambda p: f"({p[0]} and {p[1]})"), two.map(lambda p: f"({p[0]} or {p[1]})"),
        two.map(lambda p: f"({p[0]}, {p[1]})"), two.map(lambda p: f"({p[0]} + {p[1]})"),
        children.map(lambda e: f"[{e}]"), children.map(lambda e: f"select({e})"),
        children.map(lambda e: f"map({e})?"), children.map(lambda e: f"any({e})?"),
        children.map(lambda e: f"{{k: ({e})}}"), children.map(lambda e: f"({e})?"),
        two.map(lambda p: f"(if {p[0]} then {p[1]} else . end)"),
        two.map(lambda p: f"({p[0]} as $v | {p[1]} | [., $v])"),
    )


exprs = st.recursive(atoms, _expr, max_leaves=6)


def over_random_programs(check: Callable[[str, Any, Counter[str]], None], examples: int) -> Counter[str]:
    """`check(expr, value, seen)` on random programs and inputs; `seen` counts the examples,
    and what `check` counts."""
    seen: Counter[str] = Counter()

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(expr=exprs, value=values)
    def run(expr: str, value: Any) -> None:
        seen["examples"] += 1
        check(expr, value, seen)

    run()
    return seen


def test_random_expressions_agree_with_libjq() -> None:
    def check(expr: str, value: Any, seen: Counter[str]) -> None:
        if same(expr, value) is not None:  # `same` compares where the native path answers
            seen["native"] += 1

    at_least(over_random_programs(check, 400), native=0.3)


GOJQ = shutil.which("gojq")


def _closures(expr: str, value: Any) -> list[Any] | None:
    inp = prepare(value, False)
    try:
        return native.Program(expr, native.compile_node(native.parse(expr))).run(inp.value, inp.exponents)
    except native.Fallback:
        return None


def test_generated_code_answers_as_the_closures_do() -> None:
    """codegen.py inlines the closures' logic; where both answer, they answer alike."""
    def check(expr: str, value: Any, seen: Counter[str]) -> None:
        gen, clo = natively(expr, value), _closures(expr, value)
        if gen is not None and clo is not None:
            seen["both"] += 1
            assert json.dumps(gen, sort_keys=True) == json.dumps(clo, sort_keys=True), (expr, value)

    at_least(over_random_programs(check, 400), both=0.3)


def test_expressions_run_as_generated_code() -> None:
    prog = codegen.compile_expression('(.spec.x // []) | map(select(.type == "Ready")) | length')
    assert prog is not None and prog.fn.__name__ == "_expression"
    assert prog.run({"spec": {"x": [{"type": "Ready"}, {"type": "Failed"}]}}) == [1]


@pytest.mark.parametrize("items", [
    [[1], [2, 3], None, [], [4]], ["a", "b", None, "c"], [{"a": 1}, {"b": 2}, None, {"a": 3}], [1, 2.5, None, 3],
    [None, None], [], ["a", 1], [[1], "a"], [{"a": 1}, [1]], [None, "a", "b", [1]], [1, None, "x"],
])
def test_add_answers_as_libjq_for_any_mix(items: list[Any]) -> None:
    same("add", items)
    same("[.[] | [.]] | add | length", items)


@pytest.mark.parametrize("expr", [
    "." + ".".join(f"a{i}" for i in range(150)), " // ".join(f".a{i}" for i in range(300)),
    " and ".join(f".a{i}" for i in range(400)),
])
def test_expressions_nested_beyond_pythons_parser_run_as_closures(expr: str) -> None:
    """Generated code nests a parenthesis per node; Python's parser stops at 200."""
    prog = codegen.compile_expression(expr)
    assert prog is not None and prog.fn.__name__ != "_expression"
    assert same(expr, {"a0": {"a1": None}}) is not None


def test_add_is_linear_in_its_input() -> None:
    """Each step of a + b would copy what has been added so far: 5 * 10^9 copies here."""
    many = [[i] for i in range(100_000)]
    assert natively("add | length", many) == [100_000]
    assert natively("[.[] | tostring] | add | length", list(range(100_000))) == [488890]


def test_a_runaway_product_hands_back_within_its_budget() -> None:
    digits = "(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"
    expr = "[" + " | ".join(f"{digits} as $v{i}" for i in range(10)) + " | 1] | length"  # 10^10 outputs
    assert codegen.compile_expression(expr) is not None and natively(expr, None) is None
    assert natively("[" + " | ".join(f"{digits} as $v{i}" for i in range(4)) + " | 1] | length", None) == [10000]


@dataclass(frozen=True)
class Divergence:
    """Where gojq 0.12 (the reference's engine) and libjq answer differently, the native path
    answers as libjq, as every caller always got.  `shim` is libjq's meaning spelled in jq for
    gojq; `rewrite` turns the program's syntax of the construct into the shim's function."""

    name: str
    program: str
    value: Any
    libjq: list[Any] | None  # None: libjq raises an error
    gojq: list[Any] | None  # None: gojq raises an error
    why: str
    shim: str
    rewrite: tuple[str, str] | None = None


# Reviewed: a random program that disagrees with gojq for any other reason fails the test.
GOJQ_DIVERGENCES = [
    Divergence("reverse of null", "reverse", None, [[]], None,
               "libjq's reverse is `[.[length - 1 - range(0; length)]]`, and null has length 0; gojq refuses null",
               "def reverse: if type == \"string\" then error(\"Cannot index string with number\") "
               "else [.[length - 1 - range(0; length)]] end;"),
    Divergence("index a string by number", "[.[0]?, first?, last?]", "ab", [[]], [["a", "a", "b"]],
               "gojq indexes a string's characters (`\"ab\" | .[0]` is \"a\", so are first and last); libjq: "
               "\"Cannot index string with number\"",
               "def _libjq_index($i): if type == \"string\" then error(\"Cannot index string with number\") "
               "else .[$i] end; def first: _libjq_index(0); def last: _libjq_index(-1);",
               (r"\.\[(-?\d+)\]", r"_libjq_index(\1)")),
]
GOJQ_PRELUDE = " ".join(d.shim for d in GOJQ_DIVERGENCES)


def gojq(program: str, value: Any, shims: list[Divergence] = GOJQ_DIVERGENCES) -> list[Any] | None:
    """gojq's answer (None: an error), with the shims of `shims` in force."""
    assert GOJQ is not None, "gojq (the reference's engine) is installed by `make tools`"
    for d in shims:
        if d.rewrite:
            program = re.sub(*d.rewrite, program)
    prelude = " ".join(d.shim for d in shims)
    p = subprocess.run([GOJQ, "-c", f"{prelude} {program}"], input=json.dumps(value), capture_output=True, text=True,
                       timeout=20, check=False)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()] if p.returncode == 0 else None


def _answer(r: jqbatch.Result) -> list[Any] | None:
    return r.values if r.ok else None


@pytest.mark.parametrize("d", GOJQ_DIVERGENCES, ids=lambda d: d.name)
def test_each_known_gojq_divergence_is_real_and_its_shim_gives_libjqs_answer(d: Divergence) -> None:
    assert _answer(libjq(d.program, d.value)) == d.libjq
    assert natively(d.program, d.value) in (d.libjq, None)  # the native path answers as libjq, or hands back
    assert gojq(d.program, d.value, shims=[]) == d.gojq != d.libjq
    assert gojq(d.program, d.value, shims=[d]) == d.libjq


def test_random_expressions_agree_with_gojq() -> None:
    def check(expr: str, value: Any, seen: Counter[str]) -> None:
        got = natively(expr, value)
        if got is None:
            return
        seen["native"] += 1
        want = gojq(expr, value)
        assert want is not None, f"gojq fails on {expr!r} {value!r} where the native path answers {got!r}"
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True), (expr, value, got, want)

    at_least(over_random_programs(check, 60), native=0.3)


def test_a_product_of_iterations_is_not_built_in_memory() -> None:
    """`.[] as $x | .[]` over 400 items is 160,000 outputs: past 100,000 the native path hands
    the expression to libjq, which streams it, instead of building the list."""
    value = list(range(400))
    expr = "[.[] as $x | .[]] | length"
    assert natively(expr, value) is None
    got = jqbatch.Batch([expr])._run_native([prepare(value, False)], None)[0][0]
    assert got.values == [160000]
    assert natively("[.[] as $x | .[] | select(. == $x)] | length", value) == [400]  # small enough: native


# Builtins on inputs of the wrong type: a jq error (which `?` turns into nothing) only where
# libjq errs too; elsewhere libjq's answer.  `[(f)?]` shows the difference.
ODD = [("null", f) for f in ("add", "any", "all", "sort", "min", "max", "unique", "keys", "first", "last", "reverse",
                             "to_entries", "tojson", "floor", "map(.)", 'has("a")', 'startswith("a")',
                             'ltrimstr("a")', 'rtrimstr("a")', 'test("a")', 'gsub("a"; "b")', "contains(null)",
                             "tonumber", 'split("a")', "sort_by(.)", "any(.)", "IN(1)", ".[1:2]", "with_entries(.)",
                             ".[[1]]", "length", "-.", 'join(",")', "from_entries", "ascii_downcase", "type",
                             "keys[0]?", ".a?.b", "(.a)?.b?", "[.[]?]")] + [
    (inp, f) for inp in ('"ab"', "{}", "[1]", "1", "true", '{"a":1}', "[[1,2]]")
    for f in ("first", "reverse", "keys", "length", "add", 'has("a")', "has(0)", 'contains("a")', "tonumber", "-.",
              ".[0]", '.["a"]', "to_entries", "sort", "map(.)", "any", 'ltrimstr("a")', 'startswith("a")', "tostring")]


@pytest.mark.parametrize("inp,f", ODD)
def test_builtins_on_odd_inputs_agree_with_libjq(inp: str, f: str) -> None:
    same(f"[({f})?]", json.loads(inp))
    same(f, json.loads(inp))
