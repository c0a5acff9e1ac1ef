"""Tests for the reference-compatible safety blacklist (app.jqlang.safety)."""

from __future__ import annotations

import pytest

from app.jqlang import blacklist_violations, parse
from app.jqlang.safety import STRICT_WRAPPER_FUNCTIONS

from .cases import VALID

DEL = "del function is not allowed"
DOTDOT = "recursive descent operator '..' is not allowed"


def EXC(name: str) -> str:
    return f"function '{name}' may produce excessive output and is not allowed"


def MOD(op: str) -> str:
    return f"modifying operator '{op}' is not allowed"


def check(expr: str, strict: bool = False) -> list[str]:
    return blacklist_violations(parse(expr), strict=strict)


# ---------------------------------------------------------------------------
# each blacklisted construct at top level
# ---------------------------------------------------------------------------

TOP_LEVEL = {
    "del(.a)": [DEL],
    "del(.a, .b)": [DEL],
    "del": [DEL],
    "del(.a; .b)": [DEL],
    "range(5)": [EXC("range")],
    "range(0; 5)": [EXC("range")],
    "range(0; 10; 2)": [EXC("range")],
    "range": [EXC("range")],
    "paths": [EXC("paths")],
    'paths(type == "number")': [EXC("paths")],
    "recurse": [EXC("recurse")],
    "recurse(.[]?)": [EXC("recurse")],
    "recurse(.[]; . != null)": [EXC("recurse")],
    "walk(.)": [EXC("walk")],
    "repeat(.)": [EXC("repeat")],
    "..": [DOTDOT],
    "..|numbers": [DOTDOT],
    ".a = 1": [MOD("=")],
    ".a |= 1": [MOD("|=")],
    ".a += 1": [MOD("+=")],
    ".a -= 1": [MOD("-=")],
    ".a *= 2": [MOD("*=")],
    ".a /= 2": [MOD("/=")],
    ".a %= 2": [MOD("%=")],
    ".a //= 1": [MOD("//=")],
}


@pytest.mark.parametrize("expr,expected", list(TOP_LEVEL.items()))
@pytest.mark.parametrize("strict", [False, True])
def test_top_level(expr, expected, strict):
    assert check(expr, strict) == expected


# ---------------------------------------------------------------------------
# nested places the reference does descend into (reported in both modes)
# ---------------------------------------------------------------------------

NESTED = {
    # function definitions: body (even if never called) and the scoped query
    "def f: range(3); 1": [EXC("range")],
    "def f(g): g | del(.a); f(.)": [DEL],
    "def f: 1; walk(.)": [EXC("walk")],
    "def f: def g: ..; g; f": [DOTDOT],
    # function arguments
    "map(del(.a))": [DEL],
    "select(.a |= 1)": [MOD("|=")],
    "f(1; 2; recurse)": [EXC("recurse")],
    "first(range(10))": [EXC("range")],
    # parentheses, arrays, objects
    "(..)": [DOTDOT],
    "[range(3)]": [EXC("range")],
    "{a: range(2)}": [EXC("range")],
    "{a: 1 | paths}": [EXC("paths")],
    "{(..|tostring): 1}": [DOTDOT],
    '{"\\(range(1))": 1}': [EXC("range")],
    '{"k\\(..)"}': [DOTDOT],
    # if / elif / else
    "if range(1) then 1 else 2 end": [EXC("range")],
    "if . then .. else 2 end": [DOTDOT],
    "if . then 1 elif del(.a) then 2 end": [DEL],
    "if . then 1 elif . then repeat(.) end": [EXC("repeat")],
    "if . then 1 else walk(.) end": [EXC("walk")],
    # try / catch
    "try range(1) catch 0": [EXC("range")],
    "try 0 catch walk(.)": [EXC("walk")],
    "try (.a = 1)": [MOD("=")],
    # reduce / foreach
    "reduce range(3) as $x (0; . + $x)": [EXC("range")],
    "reduce .[] as $x (..; .)": [DOTDOT],
    "reduce .[] as $x (0; .a += $x)": [MOD("+=")],
    "foreach range(3) as $x (0; 1)": [EXC("range")],
    "foreach .[] as $x (0; 1; del(.a))": [DEL],
    "foreach .[] as $x (paths; 1)": [EXC("paths")],
    # string interpolation (plain and @format strings)
    '"\\(..)"': [DOTDOT],
    '"a\\(1)b\\(range(2))"': [EXC("range")],
    '@base64 "\\(recurse)"': [EXC("recurse")],
    # index and slice bounds
    ".[range(1)]": [EXC("range")],
    ".[..]": [DOTDOT],
    ".[range(1):]": [EXC("range")],
    ".[:paths]": [EXC("paths")],
    ".a[1:walk(.)]": [EXC("walk")],
    # both sides of binary operators, postfix ?
    "1 + range(2)": [EXC("range")],
    "range(2) + 1": [EXC("range")],
    ". // del(.a)": [DEL],
    ".a and (.b |= 1)": [MOD("|=")],
    "(..)?": [DOTDOT],
    "if . then .. end?": [DOTDOT],
    # the source term of a binding is checked (only its body is not)
    "range(3) as $x | $x": [EXC("range")],
    "[..] as [$x] | $x": [DOTDOT],
    # directives wrap the query
    'import "m" as m; ..': [DOTDOT],
    "module {}; del(.a)": [DEL],
}


@pytest.mark.parametrize("expr,expected", list(NESTED.items()))
@pytest.mark.parametrize("strict", [False, True])
def test_nested(expr, expected, strict):
    assert check(expr, strict) == expected


# ---------------------------------------------------------------------------
# the reference's blind spots: missed with strict=False, caught with strict=True
# ---------------------------------------------------------------------------

GAPS = {
    # binding bodies
    ". as $x | range(3)": [EXC("range")],
    ".a as $x | $x | del(.b)": [DEL],
    ". as [$a] ?// $a | ..": [DOTDOT],
    "1 + (. as $x | .a = $x)": [MOD("=")],
    # binding / reduce / foreach destructuring patterns
    ". as {(range(1) | tostring): $v} | $v": [EXC("range")],
    "reduce .[] as {(paths | tostring): $v} (0; .)": [EXC("paths")],
    # label bodies
    "label $f | ..": [DOTDOT],
    "label $f | range(10) | ., break $f": [EXC("range")],
    # unary minus / plus operands
    "-(range(3))": [EXC("range")],
    "-(.a |= 1)": [MOD("|=")],
    "+(..)": [DOTDOT],
    "1 - -(del(.a))": [DEL],
    # wrapper builtins the reference does not know about
    "leaf_paths": [STRICT_WRAPPER_FUNCTIONS["leaf_paths"]],
    "[leaf_paths]": [STRICT_WRAPPER_FUNCTIONS["leaf_paths"]],
    "map_values(. + 1)": [STRICT_WRAPPER_FUNCTIONS["map_values"]],
    'delpaths([["a"]])': [STRICT_WRAPPER_FUNCTIONS["delpaths"]],
    'setpath(["a"]; 1)': [STRICT_WRAPPER_FUNCTIONS["setpath"]],
    "tostream": [STRICT_WRAPPER_FUNCTIONS["tostream"]],
    "recurse_down": [STRICT_WRAPPER_FUNCTIONS["recurse_down"]],
}


@pytest.mark.parametrize("expr,expected", list(GAPS.items()))
def test_gap_not_reported_like_the_reference(expr, expected):
    assert check(expr) == []


@pytest.mark.parametrize("expr,expected", list(GAPS.items()))
def test_gap_reported_in_strict_mode(expr, expected):
    assert check(expr, strict=True) == expected


def test_gap_and_visible_violation_together():
    expr = "range(1) as $x | del(.a)"
    assert check(expr) == [EXC("range")]
    assert check(expr, strict=True) == [EXC("range"), DEL]


def test_wrapper_messages_are_one_line_sentences():
    for name, msg in STRICT_WRAPPER_FUNCTIONS.items():
        assert f"'{name}'" in msg and "\n" not in msg and msg.endswith("not allowed")


# ---------------------------------------------------------------------------
# order and multiplicity
# ---------------------------------------------------------------------------

ORDER = {
    "del(range(1))": [DEL, EXC("range")],
    ".a = ..": [MOD("="), DOTDOT],
    "[..] | del(.a)": [DOTDOT, DEL],
    "range(1), range(2)": [EXC("range"), EXC("range")],
    "paths | walk(.) | .a |= .b // ..": [EXC("paths"), EXC("walk"), MOD("|="), DOTDOT],
    "{a: del(.x), (range(1)|tostring): ..}": [DEL, EXC("range"), DOTDOT],
    "if .. then del(.a) elif range(1) then paths else walk(.) end": [
        DOTDOT, DEL, EXC("range"), EXC("paths"), EXC("walk"),
    ],
    "def f: range(1); f | ..": [EXC("range"), DOTDOT],
    "(.a = 1) |= del(.b)": [MOD("|="), MOD("="), DEL],
}


@pytest.mark.parametrize("expr,expected", list(ORDER.items()))
def test_walk_order(expr, expected):
    assert check(expr) == expected


# ---------------------------------------------------------------------------
# things that must not be reported
# ---------------------------------------------------------------------------

CLEAN = [
    ".spec.replicas",
    ".spec.replicatedJobs[] | .replicas * (.template.spec.parallelism // 1)",
    'any((.status.conditions // [])[]; .type == "Ready" and .status == "True")',
    '[.status.conditions[]? | select(.type=="Failed")] | length > 0',
    ".range",
    ".paths.recurse",
    '.["del"]',
    "{range: 1, del: 2, walk: 3}",
    '"range(1) and .. and del(.a)"',
    "$range",
    ". as $del | $del",
    "def del: 1;",
    "def range(n): n; 1",
    "ranges",
    "my_del(.a)",
    "m::range(1)",
    "a::del",
    "path(.a)",
    "getpath([\"a\"])",
    "to_entries",
    "with_entries(.)",
    "1 == 2",
    ".a // .b",
    "limit(1; .[])",
    "first(.[])",
    ". | .",
]


@pytest.mark.parametrize("expr", CLEAN)
@pytest.mark.parametrize("strict", [False, True])
def test_clean(expr, strict):
    assert check(expr, strict) == []


def test_none_node():
    assert blacklist_violations(None) == []


@pytest.mark.parametrize("expr", VALID)
def test_lenient_is_a_subsequence_of_strict(expr):
    lenient = check(expr)
    strict = iter(check(expr, strict=True))
    assert all(any(v == s for s in strict) for v in lenient)
