"""Kubernetes label selectors (`-l` / `labelSelector=`): parse the text once, match label maps.

The grammar and rules are apimachinery's `labels.Parse`: requirements separated by commas, each
`key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>N`,
`key<N`.  `!=` and `notin` also match when the key is absent; `>`/`<` need an integer value.
Keys are qualified names (optional DNS-subdomain prefix + "/"), values label values.  Pure: no
I/O, so the CLI and the service share it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_OPERATORS = ("==", "!=", "=", "in", "notin", ">", "<")
_SPECIAL = "()!,=<>"


class SelectorError(ValueError):
    """The selector text is not a valid label selector; the message says where and why."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "exists", "!", "=", "!=", "in", "notin", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        v = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and v in self.values
        if self.op in ("!=", "notin"):
            return not has or v not in self.values
        try:  # > and <: both sides integers, as apimachinery
            n = int(str(v))
        except ValueError:
            return False
        return n > int(self.values[0]) if self.op == ">" else n < int(self.values[0])


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _SPECIAL:
            two = text[i : i + 2]
            if two in ("==", "!="):
                out.append(two)
                i += 2
            else:
                out.append(c)
                i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        raise SelectorError(
            f'invalid label key "{key}": the prefix must be a DNS subdomain (lowercase '
            "alphanumerics, '-' and '.', at most 253 characters)"
        )
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise SelectorError(
            f'invalid label key "{key}": a name of at most 63 characters, alphanumerics, '
            "'-', '_' or '.', starting and ending with an alphanumeric"
        )


def check_value(value: str) -> None:
    if value and (len(value) > 63 or not _NAME.fullmatch(value)):
        raise SelectorError(
            f'invalid label value "{value}": at most 63 characters, alphanumerics, '
            "'-', '_' or '.', starting and ending with an alphanumeric (or empty)"
        )


def parse(text: str) -> Selector:
    """A selector from its text; an empty text selects everything.  Raises SelectorError."""
    toks = _tokens(text)
    pos = 0
    reqs: list[Requirement] = []

    def peek() -> str | None:
        return toks[pos] if pos < len(toks) else None

    def take(what: str) -> str:
        nonlocal pos
        t = peek()
        if t is None:
            raise SelectorError(f"{what} expected at the end")
        pos += 1
        return t

    def identifier(what: str) -> str:
        t = take(what)
        if t in _SPECIAL or t in ("==", "!="):
            raise SelectorError(f'{what} expected, found "{t}"')
        return t

    while pos < len(toks):
        if peek() == "!":
            pos += 1
            key = identifier("a label key after '!'")
            check_key(key)
            reqs.append(Requirement(key, "!"))
        else:
            key = identifier("a label key")
            check_key(key)
            op = peek()
            if op is None or op == ",":
                reqs.append(Requirement(key, "exists"))
            elif op not in _OPERATORS:
                raise SelectorError(
                    f'after "{key}": an operator (=, ==, !=, in, notin, >, <) or "," expected, found "{op}"'
                )
            else:
                pos += 1
                if op in ("in", "notin"):
                    if take(f'"(" after "{key} {op}"') != "(":
                        raise SelectorError(f'"(" expected after "{key} {op}"')
                    values: list[str] = []
                    while True:
                        t = take(f'a value or ")" in "{key} {op} (...)"')
                        if t == ")" and not values:
                            break  # `in ()`: an empty set, as apimachinery allows
                        if t in (",", ")"):
                            values.append("")  # an empty value between separators
                        else:
                            check_value(t)
                            values.append(t)
                            t = take(f'"," or ")" in "{key} {op} (...)"')
                        if t == ")":
                            break
                        if t != ",":
                            raise SelectorError(f'"," or ")" expected in "{key} {op} (...)", found "{t}"')
                    reqs.append(Requirement(key, op, tuple(values)))
                else:
                    nxt = peek()
                    if nxt is None or nxt == ",":
                        value = ""  # `key=`: the label is present and empty
                    else:
                        value = identifier(f'a value after "{key}{op}"')
                    if op in (">", "<"):
                        if not re.fullmatch(r"-?[0-9]+", value):
                            raise SelectorError(f'"{key}{op}{value}": {op} needs an integer value')
                    else:
                        check_value(value)
                    reqs.append(Requirement(key, "=" if op == "==" else op, (value,)))
        sep = peek()
        if sep is None:
            break
        if sep != ",":
            raise SelectorError(f'"," expected between requirements, found "{sep}"')
        pos += 1
        if peek() is None:
            raise SelectorError('a requirement expected after the last ","')
    return Selector(tuple(reqs))
