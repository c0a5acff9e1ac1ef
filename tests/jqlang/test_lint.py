"""Tests for gojq-vs-libjq compatibility warnings (app.jqlang.lint)."""

from __future__ import annotations

import pytest

from app.jqlang import gojq_compat_warnings, parse


def lint(expr: str) -> list[str]:
    return gojq_compat_warnings(parse(expr), expr)


SIMPLE = {
    "keys_unsorted": "'keys_unsorted' is not defined in gojq (the upstream engine); use 'keys'",
    "$__loc__": "'$__loc__' is not supported by gojq 0.12",
    "input": "'input' reads further inputs",
    "inputs": "'inputs' reads further inputs",
    "input_line_number": "'input_line_number' is not defined in gojq",
    "get_search_list": "'get_search_list' is not defined in gojq",
    "env": "'env' is empty in the upstream engine",
    "$ENV": "'$ENV' is empty in the upstream engine",
    "now": "'now' is time-dependent",
}


@pytest.mark.parametrize("construct,prefix", list(SIMPLE.items()))
def test_simple_construct_warning(construct, prefix):
    warnings = lint(construct)
    assert len(warnings) == 1
    assert warnings[0].startswith(prefix)
    assert "\n" not in warnings[0]
    assert f"'{construct}'" in warnings[0]


@pytest.mark.parametrize(
    "expr,construct",
    [
        (".metadata.labels | keys_unsorted | .[0]", "keys_unsorted"),
        ('{file: $__loc__.file}', "$__loc__"),
        ("[inputs] | length", "inputs"),
        ("if . then input else 0 end", "input"),
        ("$ENV.HOME // env.USER", "$ENV"),
        ("$ENV.HOME // env.USER", "env"),
        ('now - (.metadata.creationTimestamp | fromdateiso8601)', "now"),
        ('. as $x | label $l | -(now)', "now"),  # inside gaps of the safety walk too
        ('def f: keys_unsorted; f', "keys_unsorted"),
        ('"\\(input_line_number)"', "input_line_number"),
    ],
)
def test_construct_found_anywhere(expr, construct):
    assert any(f"'{construct}'" in w for w in lint(expr))


@pytest.mark.parametrize(
    "expr",
    [
        ".keys_unsorted",
        '{keys_unsorted: 1, now: 2, env: 3}',
        '"now $ENV input"',
        "$env",
        "$__loc",
        "def keys_unsorted: keys; keys_unsorted",
        "def now: 0; now",
        ". as $ENV | $ENV",
        ". as {$__loc__} | $__loc__",
        "def f($ENV): $ENV; f(1)",
        "keys",
        "input_filename",
        "m::now",
        "now(1)",
    ],
)
def test_not_reported(expr):
    assert lint(expr) == []


def test_each_warning_reported_once_in_order():
    assert lint("now, now, keys_unsorted, now") == [
        "'now' is time-dependent, so results change between evaluations and can differ "
        "between gojq (the upstream engine) and this engine",
        "'keys_unsorted' is not defined in gojq (the upstream engine); use 'keys'",
    ]


# ---------------------------------------------------------------------------
# regular expressions RE2 (gojq) rejects
# ---------------------------------------------------------------------------

REGEX = [
    ('test("(?=a)")', "test", "look-ahead '(?='"),
    ('test("a(?!b)")', "test", "negative look-ahead '(?!'"),
    ('test("(?<=a)b")', "test", "look-behind '(?<='"),
    ('test("(?<!a)b")', "test", "negative look-behind '(?<!'"),
    ('test("(a)\\\\1")', "test", "backreference '\\1'"),
    ('test("(?<x>a)\\\\k<x>")', "test", "named backreference '\\k<'"),
    ('test("(?=a)"; "x")', "test", "look-ahead '(?='"),
    ('test(["(?=a)", "g"])', "test", "look-ahead '(?='"),
    ('match("(a)(b)\\\\2")', "match", "backreference '\\2'"),
    ('match("(?<=v)\\\\d+"; "g")', "match", "look-behind '(?<='"),
    ('capture("(?<n>a)(?=b)")', "capture", "look-ahead '(?='"),
    ('scan("(\\\\w)\\\\1")', "scan", "backreference '\\1'"),
    ('scan("(?!x)."; "g")', "scan", "negative look-ahead '(?!'"),
    ('split("(?<=,)"; null)', "split", "look-behind '(?<='"),
    ('sub("(?<=a)b"; "c")', "sub", "look-behind '(?<='"),
    ('sub("(a)\\\\1"; "c"; "g")', "sub", "backreference '\\1'"),
    ('gsub("(?=x)"; "-")', "gsub", "look-ahead '(?='"),
    ('splits("(?<!x),")', "splits", "negative look-behind '(?<!'"),
    ('splits("(?!a)"; "g")', "splits", "negative look-ahead '(?!'"),
    ('.name | test(("(?=a)"))', "test", "look-ahead '(?='"),
]


@pytest.mark.parametrize("expr,func,what", REGEX)
def test_regex_rejected_by_re2(expr, func, what):
    warnings = lint(expr)
    assert len(warnings) == 1, warnings
    w = warnings[0]
    assert f"passed to '{func}'" in w
    assert f"uses {what}," in w
    assert "RE2" in w and "gojq" in w


def test_regex_is_quoted_as_written():
    [w] = lint('test("(a)\\\\1")')
    assert w.startswith('regex "(a)\\\\1" passed to \'test\'')


def test_regex_multiple_problems():
    warnings = lint('test("(?=a)(b)\\\\1") | gsub("(?<!x)"; "")')
    assert len(warnings) == 3


@pytest.mark.parametrize(
    "expr",
    [
        'test("a(?:b)c")',  # non-capturing group is fine
        'test("(?<name>a)")',  # named group is fine
        'test("(?i)abc")',  # inline flags are fine
        'test("[(?=]")',  # inside a character class
        'test("\\\\\\\\1")',  # escaped backslash followed by 1
        'test("a\\\\d+")',
        'split("(?=a)")',  # split/1 takes a plain string, not a regex
        'ltrimstr("(?=a)")',
        'test($re)',  # not a literal
        'test("\\(.x)(?=a)")',  # interpolated, not checked
        'def test(r): 1; test("(?=a)")',  # user-defined
        '"(?=a)"',
    ],
)
def test_regex_not_reported(expr):
    assert lint(expr) == []


def test_src_is_optional():
    [w] = gojq_compat_warnings(parse('test("(?=a)")'))
    assert w.startswith('regex "(?=a)"')


def test_none_node():
    assert gojq_compat_warnings(None) == []
