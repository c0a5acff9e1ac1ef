"""Tests for the gojq-compatible jq parser (app.jqlang.parser)."""

from __future__ import annotations

import random
import re

import pytest

from app.jqlang import JqParseError, Node, dump, parse, walk
from app.jqlang.lexer import decode_string, tokenize

from .cases import INVALID, VALID
from .gojq_oracle import EXPECTED_VERSION, INSTALL_HINT, gojq_path, gojq_version, run_gojq


def _id(expr: str) -> str:
    return repr(expr)[:70]


def ours(expr: str) -> tuple[bool, str | None]:
    try:
        parse(expr)
    except JqParseError as err:
        return False, str(err)
    return True, None


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------


def test_tables_are_large_and_disjoint():
    assert len(VALID) >= 150
    assert len(INVALID) >= 100
    assert not set(VALID) & set(INVALID)


@pytest.mark.parametrize("expr", VALID, ids=_id)
def test_valid_expression_parses(expr):
    node = parse(expr)
    assert isinstance(node, Node)
    # every node is reachable by the generic walker and has sane positions
    for n in walk(node):
        assert isinstance(n.kind, str)
        assert 0 <= n.start <= n.end <= len(expr)


@pytest.mark.parametrize("expr,message", sorted(INVALID.items()), ids=_id)
def test_invalid_expression_message(expr, message):
    with pytest.raises(JqParseError) as info:
        parse(expr)
    assert str(info.value) == message
    assert info.value.message == message
    assert isinstance(info.value, ValueError)


# ---------------------------------------------------------------------------
# differential testing against the real gojq binary
# ---------------------------------------------------------------------------

_FUZZ_VOCAB = [
    ".", "..", ".a", "[", "]", "(", ")", "{", "}", ",", "|", ":", ";", "?", "?//", "//", "=",
    "|=", "+=", "==", "<", "+", "-", "*", "/", "%", "and", "or", "not", "if", "then", "elif",
    "else", "end", "try", "catch", "reduce", "foreach", "as", "def", "label", "break", "import",
    "include", "module", "$x", "$a::b", "a::b", "f", "1", '"s"', '"\\(1)"', "@base64", "null",
    ".[]", "$__loc__", '"', "\\(", "é", "1.", ".5", "1e", "#c\n",
]
_FUZZ_CHARS = list('.[](){}|,:;?/=+-*%<>!@$"\\# eE019ab_xu') + ["..", "\\(", "\\u", "::", "\n"]
_DIFF_UNSAFE = re.compile(r"\\[^\x00-\x7f]")  # gojq reports half a UTF-8 byte there


def _fuzz_corpus(n: int = 320, seed: int = 20240601) -> list[str]:
    """Deterministic token- and character-level mutations of the tables."""
    rnd = random.Random(seed)
    base = list(VALID) + list(INVALID)
    out: dict[str, None] = {}
    while len(out) < n:
        e = rnd.choice(base)
        for _ in range(rnd.randrange(1, 4)):
            if rnd.random() < 0.6:
                parts = [e[t[2] : t[3]] for t in tokenize(e) if t[0] != "EOF" and t[3] > t[2]] or ["."]
                k = rnd.randrange(len(parts))
                op = rnd.randrange(5)
                if op == 0 and len(parts) > 1:
                    del parts[k]
                elif op == 1:
                    parts.insert(k, rnd.choice(_FUZZ_VOCAB))
                elif op == 2:
                    parts[k] = rnd.choice(_FUZZ_VOCAB)
                elif op == 3:
                    parts = parts[:k]
                else:
                    j = rnd.randrange(len(parts))
                    parts[k], parts[j] = parts[j], parts[k]
                e = (" " if rnd.random() < 0.7 else "").join(parts)
            else:
                k = rnd.randrange(len(e) + 1)
                if rnd.random() < 0.5:
                    e = e[:k] + rnd.choice(_FUZZ_CHARS) + e[k:]
                else:
                    e = e[:k] + e[k + 1 :]
        # the gojq CLI trims Unicode white space around the query (the library does not)
        e = e.strip()
        if _DIFF_UNSAFE.search(e) or e in out:
            continue
        out[e] = None
    return list(out)


FUZZ = _fuzz_corpus()
DIFFERENTIAL = list(dict.fromkeys(list(VALID) + list(INVALID) + FUZZ))


@pytest.fixture(scope="session")
def gojq_results() -> dict[str, tuple[bool, str | None]]:
    if gojq_path() is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return run_gojq(DIFFERENTIAL)


def test_gojq_binary_version():
    path = gojq_path()
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    version = gojq_version(path)
    assert version == EXPECTED_VERSION, (
        f"{path} is gojq {version}; the parser and these tables target gojq {EXPECTED_VERSION} "
        "(later 0.12.x releases changed the grammar, e.g. if/try/reduce became terms)"
    )


def test_differential_corpus_is_big_enough():
    assert len(FUZZ) >= 300
    assert len(DIFFERENTIAL) >= 750


@pytest.mark.parametrize("expr", DIFFERENTIAL, ids=_id)
def test_agrees_with_gojq(expr, gojq_results):
    expected = gojq_results[expr]
    assert ours(expr) == expected, f"gojq says {expected} for {expr!r}"


def test_tables_match_gojq(gojq_results):
    wrong_valid = [e for e in VALID if gojq_results[e] != (True, None)]
    wrong_invalid = {e: gojq_results[e] for e, m in INVALID.items() if gojq_results[e] != (False, m)}
    assert not wrong_valid, f"gojq rejects: {wrong_valid}"
    assert not wrong_invalid, f"gojq disagrees with the INVALID table: {wrong_invalid}"


def test_fuzz_corpus_covers_both_outcomes(gojq_results):
    outcomes = [gojq_results[e][0] for e in FUZZ]
    assert outcomes.count(True) >= 40
    assert outcomes.count(False) >= 150


# ---------------------------------------------------------------------------
# AST shape: precedence, associativity, node kinds
# ---------------------------------------------------------------------------

SHAPES = {
    "1 + 2 * 3": "(binop + (number 1) (binop * (number 2) (number 3)))",
    "1 * 2 + 3": "(binop + (binop * (number 1) (number 2)) (number 3))",
    "1 - 2 - 3": "(binop - (binop - (number 1) (number 2)) (number 3))",
    "a | b | c": "(binop | (call a) (binop | (call b) (call c)))",
    "a , b , c": "(binop , (binop , (call a) (call b)) (call c))",
    "a, b | c, d": "(binop | (binop , (call a) (call b)) (binop , (call c) (call d)))",
    "a // b // c": "(binop // (call a) (binop // (call b) (call c)))",
    "a // b , c": "(binop , (binop // (call a) (call b)) (call c))",
    "a = b // c": "(binop // (update = (call a) (call b)) (call c))",
    ".a |= . + 1": "(update |= (field a (identity)) (binop + (identity) (number 1)))",
    "a or b and c": "(binop or (call a) (binop and (call b) (call c)))",
    "a and b or c": "(binop or (binop and (call a) (call b)) (call c))",
    "a == b and c < d": "(binop and (binop == (call a) (call b)) (binop < (call c) (call d)))",
    "1 = 2 == 3": "(update = (number 1) (binop == (number 2) (number 3)))",
    "-1 + 2": "(binop + (unary - (number 1)) (number 2))",
    "-.a[0]?": "(unary - (optional (index (field a (identity)) (number 0))))",
    "1 -1": "(binop - (number 1) (number 1))",
    "try 1 + 2": "(binop + (try (number 1) _) (number 2))",
    "try 1 catch 2 + 3": "(binop + (try (number 1) (number 2)) (number 3))",
    "try 1 catch if . then 1 end ?": "(optional (try (number 1) (if (identity) (number 1) _)))",
    "try 1 as $x | $x + 1": "(try (bind (number 1) (pvar $x) (binop + (var $x) (number 1))) _)",
    "1 + 2 as $x | 3, 4": "(binop + (number 1) (bind (number 2) (pvar $x) (binop , (number 3) (number 4))))",
    "1 as $x | 2 | 3": "(bind (number 1) (pvar $x) (binop | (number 2) (number 3)))",
    "label $f | 1, 2": "(label $f (binop , (number 1) (number 2)))",
    "def f: 1; f | g": "(funcdef f (number 1) (binop | (call f) (call g)))",
    "1, def f: 2; f, 3": "(binop , (number 1) (funcdef f (number 2) (binop , (call f) (number 3))))",
    "def f(a; $b): a; f(1; 2)": "(funcdef f [a $b] (call a) (call f (number 1) (number 2)))",
    "def f: 1; def g: 2;": "(funcdef f (number 1) (funcdef g (number 2) _))",
    "if . then 1 else 2 end | .a": "(binop | (if (identity) (number 1) (number 2)) (field a (identity)))",
    "if a then b elif c then d end": "(if (call a) (call b) (call c) (call d) _)",
    "reduce .[] as $x (0; . + $x)": "(reduce (iterate (identity)) (pvar $x) (number 0) (binop + (identity) (var $x)))",
    "foreach .[] as [$a] (0; 1)": "(foreach (iterate (identity)) (parray (pvar $a)) (number 0) (number 1) _)",
    "foreach . as $a (0; 1; 2)?": "(optional (foreach (identity) (pvar $a) (number 0) (number 1) (number 2)))",
    ".a.b[0][\"x\"]?": "(optional (index (index (field b (field a (identity))) (number 0)) (string 'x')))",
    '."a".b': "(field b (index (identity) (string 'a')))",
    ".a.[1:]": "(slice (field a (identity)) (number 1) _)",
    ".[:2]": "(slice (identity) _ (number 2))",
    ".[1:2]": "(slice (identity) (number 1) (number 2))",
    ".[]?": "(optional (iterate (identity)))",
    "..": "(recurse)",
    "..[0]": "(index (recurse) (number 0))",
    "$__loc__": "(var $__loc__)",
    "a::b(1)": "(call a::b (number 1))",
    '"a\\(1)b"': "(interp (string 'a') (number 1) (string 'b'))",
    '@base64 "x\\(.)"': "(format @base64 (interp (string 'x') (identity)))",
    "@csv": "(format @csv)",
    "[]": "(array)",
    "[1, 2]": "(array (binop , (number 1) (number 2)))",
    '{a, $b, "c": 1, (d): 2, if: 3, "e\\(f)"}': (
        "(object (entry (objkey a) _) (entry (var $b) _) (entry (string 'c') (number 1)) "
        "(entry (paren (call d)) (number 2)) (entry (objkey if) (number 3)) "
        "(entry (interp (string 'e') (call f)) _))"
    ),
    "{a: 1 | 2 | 3}": "(object (entry (objkey a) (binop | (number 1) (binop | (number 2) (number 3)))))",
    ". as [$a, {b: $c, $d, \"e\": $f, (g): $h}] ?// $a | $a": (
        "(bind (identity) (parray (pvar $a) (pobject (pentry (objkey b) (pvar $c)) (pentry (var $d) _) "
        "(pentry (string 'e') (pvar $f)) (pentry (paren (call g)) (pvar $h)))) (pvar $a) (var $a))"
    ),
    'import "m" as $d; include "n" {x: 1}; .': (
        "(import 'm' [$d] _ (include 'n' (object (entry (objkey x) (number 1))) (identity)))"
    ),
    "module {a: [1, 2]}; .": "(module (object (entry (objkey a) (array (binop , (number 1) (number 2))))) (identity))",
    "": "(identity)",
    "# just a comment": "(identity)",
    "label $out | break $out": "(label $out (break $out))",
    "-(1)": "(unary - (paren (number 1)))",
    "+1": "(unary + (number 1))",
    "null, true, false": "(binop , (binop , (null) (true)) (false))",
    '"\\u00e9\\ud83d\\ude00\\n"': "(string 'é😀\\n')",
}


@pytest.mark.parametrize("expr,expected", list(SHAPES.items()), ids=_id)
def test_ast_shape(expr, expected):
    assert dump(parse(expr)) == expected


def test_call_name_and_arity():
    node = parse("f(1; 2; 3) | g | h(.)")
    calls = [(n.name, n.arity) for n in walk(node) if n.kind == "call"]
    assert calls == [("f", 3), ("g", 0), ("h", 1)]


def test_funcdef_params_and_arity():
    node = parse("def f(a; $b): a; f(1; 2)")
    assert node.kind == "funcdef"
    assert node.name == "f"
    assert node.names == ("a", "$b")
    assert node.arity == 2


def test_walk_is_preorder_left_to_right():
    kinds = [n.kind for n in walk(parse("1 + f(2) * .a"))]
    assert kinds == ["binop", "number", "binop", "call", "number", "field", "identity"]


def test_every_subexpression_is_a_child():
    src = (
        'def f(x): x; . as $v | label $l | -(1) + "\\(2)" + {(3): 4}[5:6] + '
        "(if 7 then 8 elif 9 then 10 else 11 end) + (try 12 catch 13) + "
        "(reduce 14 as $r (15; 16)) + (foreach 17 as $q (18; 19; 20)) + f(21)"
    )
    numbers = sorted(int(n.value) for n in walk(parse(src)) if n.kind == "number")
    assert numbers == list(range(1, 22))


def test_positions():
    src = "  .a | f(1)  "
    node = parse(src)
    assert (node.start, node.end) == (2, 11)
    left, right = node.children
    assert src[left.start : left.end] == ".a"
    assert src[right.start : right.end] == "f(1)"


def test_nodes_compare_structurally():
    assert parse(".a | .b") == parse(" .a|.b ")
    assert parse(".a") != parse(".b")


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_error_attributes():
    with pytest.raises(JqParseError) as info:
        parse("1 == 2 == 3")
    err = info.value
    assert err.message == 'unexpected token "=="'
    assert err.token == "=="
    assert err.pos == 7
    assert err.offset == 9  # bytes scanned, like gojq's ParseError.Offset


def test_error_offset_counts_bytes():
    with pytest.raises(JqParseError) as info:
        parse('"é" é')
    assert info.value.pos == 4
    assert info.value.offset == len('"é" é'.encode())


def test_error_at_eof():
    with pytest.raises(JqParseError) as info:
        parse(".a |")
    assert (str(info.value), info.value.token, info.value.offset) == ("unexpected EOF", "", 4)


def test_stale_token_for_interpolated_string():
    # gojq does not update its token text when an interpolated string starts
    with pytest.raises(JqParseError, match=r'^unexpected token "1"$'):
        parse('1 "a\\(2)"')


def test_deep_nesting_is_a_parse_error_not_a_crash():
    with pytest.raises(JqParseError, match="nested too deeply"):
        parse("(" * 5000 + "1" + ")" * 5000)


def test_moderate_nesting_is_fine():
    parse("[" * 60 + "1" + "]" * 60)
    parse(" | ".join(["."] * 2000))
    parse(" , ".join(["1"] * 2000))


def test_non_string_input():
    with pytest.raises(TypeError):
        parse(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# lexer details
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,decoded",
    [
        ("abc", "abc"),
        ('\\"\\\\\\/\\b\\f\\n\\r\\t', '"\\/\b\f\n\r\t'),
        ("\\u00e9", "é"),
        ("\\ud83d\\ude00", "😀"),
        ("\\ud800", "\ufffd"),
        ("\\udc00x", "\ufffdx"),
        ("a\tb\nc", "a\tb\nc"),
    ],
)
def test_decode_string(raw, decoded):
    assert decode_string(raw) == decoded


def test_tokenize_types():
    types = [t[0] for t in tokenize('.a $x $m::v m::f @csv "s" 1.5 .. ?// // |= == and if')]
    assert types == [
        "INDEX", "VAR", "MODVAR", "MODIDENT", "FORMAT", "STRING", "NUMBER", "..",
        "DESTALT", "ALTOP", "UPDATEOP", "CMPOP", "and", "if", "EOF",
    ]


def test_tokenize_interpolation():
    types = [t[0] for t in tokenize('"a\\(f("x\\(1)"))b"')]
    assert types == [
        "STRSTART", "STRING", "STRQUERY", "IDENT", "(", "STRSTART", "STRING", "STRQUERY",
        "NUMBER", ")", "STREND", ")", ")", "STRING", "STREND", "EOF",
    ]


# ---------------------------------------------------------------------------
# performance
# ---------------------------------------------------------------------------


def test_a_typical_condition_parses_whole_and_alike_every_time():
    """Its speed (once bounded here at 1 ms) is benchmarks/engine_bench.py's "jq parser" line."""
    src = '[.status.conditions[]? | select(.type=="Failed")] | length > 0'
    assert 55 <= len(src) <= 70
    node = parse(src)
    assert (node.kind, node.start, node.end) == ("binop", 0, len(src))
    assert dump(node) == ("(binop | (array (binop | (optional (iterate (field conditions (field status (identity))))) "
                          "(call select (binop == (field type (identity)) (string 'Failed'))))) "
                          "(binop > (call length) (number 0)))")
    assert all(parse(src) == node for _ in range(3))
