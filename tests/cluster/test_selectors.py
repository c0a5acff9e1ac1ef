"""Label selectors (app/cluster/selectors.py): apimachinery's syntax and matching rules, table-driven."""

from __future__ import annotations

import pytest

from app.cluster.selectors import Requirement, SelectorError, parse

LABELS = {"team": "a", "tier": "gpu", "app.kubernetes.io/name": "trainer", "size": "8", "empty": ""}

MATCHES = [
    ("", True),
    ("team", True),
    ("owner", False),
    ("!owner", True),
    ("!team", False),
    ("team=a", True),
    ("team==a", True),
    ("team=b", False),
    ("team!=b", True),
    ("team!=a", False),
    ("owner!=x", True),  # absent: != matches
    ("team in (a, b)", True),
    ("team in (b,c)", False),
    ("team notin (b,c)", True),
    ("team notin (a)", False),
    ("owner notin (a)", True),  # absent: notin matches
    ("owner in (a)", False),
    ("app.kubernetes.io/name=trainer", True),
    ("team=a,tier=gpu", True),
    ("team=a, tier=cpu", False),
    ("team in (a,b),!owner,tier", True),
    ("empty=", True),
    ("empty in (,x)", True),
    ("size>4", True),
    ("size<4", False),
    ("team>1", False),  # not an integer: no match
    ("  team  =  a  ", True),
]


@pytest.mark.parametrize(("text", "expected"), MATCHES)
def test_matches(text: str, expected: bool) -> None:
    assert parse(text).matches(LABELS) is expected


def test_no_labels_at_all() -> None:
    assert parse("!team,x!=y,z notin (a)").matches(None)
    assert not parse("team").matches(None)


def test_parsed_requirements() -> None:
    assert parse("a==1, b in (x, y), !c, d").requirements == (
        Requirement("a", "=", ("1",)), Requirement("b", "in", ("x", "y")), Requirement("c", "!"),
        Requirement("d", "exists"))


ERRORS = [
    ("team in a", '"(" expected'),
    ("team in (a", 'expected at the end'),
    ("team in (a b)", '"," or ")" expected'),
    ("team=a,", 'after the last ","'),
    ("=a", "a label key expected"),
    ("team a", 'an operator'),
    ("team=a b", '"," expected between requirements'),
    ("team=a=b", '"," expected between requirements, found "="'),
    ("-bad=a", 'invalid label key "-bad"'),
    ("Example.com/x=a", "prefix must be a DNS subdomain"),
    ("/x=a", "prefix must be a DNS subdomain"),
    ("team=" + "v" * 64, "invalid label value"),
    ("team=a$", "invalid label value"),
    ("size>x", "needs an integer value"),
    ("!", "a label key after '!'"),
    ("team in (a,b", "expected at the end"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse(text)
    assert message in str(e.value), str(e.value)
