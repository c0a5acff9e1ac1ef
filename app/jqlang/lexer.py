"""Tokenizer for the jq language, mirroring gojq 0.12.x's ``lexer.go``.

The whole query is tokenized up front into a list of ``(type, value, start,
end)`` tuples (``start``/``end`` are character offsets).  Tokenizing stops
after the first token that can never be valid (``INVALID``, ``BADESC``,
``UNTERM``); the list always ends with such a token or with ``EOF``.

gojq's lexer switches back to "inside a string" mode when the parser reduces
the ``)`` closing a string interpolation ``\\(...)``.  For any valid prefix the
closing ``)`` is exactly the one that balances the ``\\(``, so tracking the
parenthesis depth per open interpolation here yields the same token stream
up to the first syntax error.

Token types:

* keywords (``if``, ``then``, ``def``, ``and``, ``or``, ...): the keyword itself
* ``IDENT`` / ``MODIDENT`` (``m::f``) / ``VAR`` (``$x``) / ``MODVAR`` (``$m::x``)
* ``INDEX`` (``.foo``; value ``foo``), ``NUMBER`` (value: text), ``FORMAT`` (``@csv``)
* ``STRING`` (value: decoded text), ``STRSTART`` ``STRQUERY`` ``STREND`` for
  interpolated strings (``STRSTART``'s value is the stale token text gojq
  reports when the string itself is the unexpected token)
* ``..``, ``ALTOP`` (``//``), ``DESTALT`` (``?//``), ``UPDATEOP`` (``= |= += -= *= /= %= //=``),
  ``CMPOP`` (``== != < <= > >=``)
* any other single character is its own type (``.``, ``|``, ``(``, ``é`` ...)
* ``EOF``, ``INVALID`` (bad number), ``BADESC`` (bad escape), ``UNTERM``
"""

from __future__ import annotations

import re

__all__ = ["KEYWORDS", "decode_string", "tokenize"]

KEYWORDS = frozenset(
    {
        "or",
        "and",
        "module",
        "import",
        "include",
        "def",
        "as",
        "label",
        "break",
        "null",
        "true",
        "false",
        "if",
        "then",
        "elif",
        "else",
        "end",
        "try",
        "catch",
        "reduce",
        "foreach",
    }
)

_SKIP = re.compile(r"(?:[ \t\r\n]+|#[^\r\n]*)+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENT_TAIL = re.compile(r"[A-Za-z0-9_]*")
_PLAIN = re.compile(r'[^"\\]*')
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


def _end(pattern: re.Pattern[str], src: str, pos: int) -> int:
    """Where ``pattern`` matched at ``pos`` ends: it matches the empty string, or the caller
    has seen its first character there."""
    m = pattern.match(src, pos)
    assert m is not None
    return m.end()


_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_DIGITS = frozenset("0123456789")
_IDENT_CHARS = _IDENT_START | _DIGITS
_SIMPLE_ESCAPES = {'"': '"', "/": "/", "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

# Tokens after which gojq's ``l.token`` is *not* updated (single ASCII chars and
# the string-structure tokens) are handled inline; see ``tokenize``.

_LEAD, _FLOAT, _EXPLEAD, _EXP = 0, 1, 2, 3


def _scan_number(src: str, n: int, j: int, state: int) -> tuple[int, bool]:
    """gojq's ``scanNumber``: ``j`` is the index after the already consumed part."""
    while True:
        ch = src[j] if j < n else ""
        if state <= _FLOAT:
            if ch in _DIGITS and ch:
                j += 1
            elif ch == ".":
                if state != _LEAD:
                    return j + 1, False
                j += 1
                state = _FLOAT
            elif ch == "e" or ch == "E":
                j += 1
                if j < n and (src[j] == "+" or src[j] == "-"):
                    j += 1
                state = _EXPLEAD
            else:
                if ch and ch in _IDENT_START:
                    return j + 1, False
                return j, True
        else:
            if not ch or ch not in _DIGITS:
                if ch and ch in _IDENT_START:
                    return j + 1, False
                return j, state != _EXPLEAD
            j += 1
            state = _EXP


def _surrogate_fix(s: str) -> str:
    # Combine UTF-16 surrogate pairs produced by \\uXXXX escapes and replace
    # lone surrogates by U+FFFD, as Go's encoding/json does.
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        o = ord(c)
        if 0xD800 <= o <= 0xDBFF and i + 1 < n and 0xDC00 <= ord(s[i + 1]) <= 0xDFFF:
            out.append(chr(0x10000 + ((o - 0xD800) << 10) + (ord(s[i + 1]) - 0xDC00)))
            i += 2
            continue
        if 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def decode_string(raw: str) -> str:
    """Decode the (already validated) body of a jq string literal fragment."""
    if "\\" not in raw:
        return raw
    out = []
    i, n = 0, len(raw)
    surrogates = False
    while i < n:
        k = raw.find("\\", i)
        if k < 0:
            out.append(raw[i:])
            break
        out.append(raw[i:k])
        e = raw[k + 1]
        if e == "u":
            cp = int(raw[k + 2 : k + 6], 16)
            if 0xD800 <= cp <= 0xDFFF:
                surrogates = True
            out.append(chr(cp))
            i = k + 6
        else:
            out.append(_SIMPLE_ESCAPES[e])
            i = k + 2
    s = "".join(out)
    return _surrogate_fix(s) if surrogates else s


def _scan_string_body(src: str, n: int, p: int) -> tuple[str, int, int]:
    """Scan from ``p`` (inside a string) up to the next ``"`` or ``\\(``.

    Returns ``(what, pos, extra)``: ``what`` is ``'"'`` (closing quote at
    ``pos``), ``'('`` (interpolation backslash at ``pos``), ``'badesc'``
    (escape ``src[pos:extra]`` is invalid) or ``'unterm'``.
    """
    j = p
    while True:
        j = _end(_PLAIN, src, j)
        if j >= n:
            return "unterm", n, n
        if src[j] == '"':
            return '"', j, 0
        # backslash
        k = j + 1
        if k >= n:
            return "unterm", n, n
        e = src[k]
        if e == "(":
            return "(", j, 0
        if e == "u":
            m = _HEX4.match(src, k + 1)
            if m is None:
                q = k + 1
                while q < n and q < k + 5 and src[q] in "0123456789abcdefABCDEF":
                    q += 1
                # gojq reports the escape up to (and excluding) the first bad char
                return "badesc", j, q
            j = k + 5
        elif e in _SIMPLE_ESCAPES:
            j = k + 1
        else:
            return "badesc", j, k + 1


def tokenize(src: str) -> list[tuple]:
    toks: list[tuple] = []
    append = toks.append
    n = len(src)
    i = 0
    last = ""  # gojq's ``l.token``: text of the last token that set it
    stack: list[int] = []  # paren depth inside each open interpolation
    in_string = False
    skip = _SKIP.match
    keywords = KEYWORDS
    while True:
        if in_string:
            if i >= n:
                append(("EOF", None, n, n))
                return toks
            what, pos, extra = _scan_string_body(src, n, i)
            if what == '"':
                if pos > i:
                    last = src[i:pos]
                    append(("STRING", decode_string(last), i, pos))
                append(("STREND", None, pos, pos + 1))
                i = pos + 1
                in_string = False
            elif what == "(":
                if pos > i:
                    last = src[i:pos]
                    append(("STRING", decode_string(last), i, pos))
                append(("STRQUERY", None, pos, pos + 2))
                i = pos + 2
                in_string = False
                stack.append(0)
            elif what == "badesc":
                append(("BADESC", None, pos, extra))
                return toks
            else:
                append(("UNTERM", None, i, n))
                return toks
            continue

        m = skip(src, i)
        if m is not None:
            i = m.end()
        if i >= n:
            append(("EOF", None, n, n))
            return toks
        c = src[i]

        if c in _IDENT_START:
            j = _end(_IDENT, src, i)
            if src.startswith("::", j) and j + 2 < n and src[j + 2] in _IDENT_START:
                j = _end(_IDENT, src, j + 2)
                last = src[i:j]
                append(("MODIDENT", last, i, j))
            else:
                last = src[i:j]
                append((last if last in keywords else "IDENT", last, i, j))
            i = j
            continue

        if c in _DIGITS:
            j, ok = _scan_number(src, n, i + 1, _LEAD)
            last = src[i:j]
            if not ok:
                append(("INVALID", last, i, j))
                return toks
            append(("NUMBER", last, i, j))
            i = j
            continue

        c2 = src[i + 1] if i + 1 < n else ""

        if c == ".":
            if c2 == ".":
                last = ".."
                append(("..", None, i, i + 2))
                i += 2
            elif c2 and c2 in _IDENT_START:
                j = _end(_IDENT_TAIL, src, i + 2)
                last = src[i:j]
                append(("INDEX", src[i + 1 : j], i, j))
                i = j
            elif c2 and c2 in _DIGITS:
                j, ok = _scan_number(src, n, i + 2, _FLOAT)
                last = src[i:j]
                if not ok:
                    append(("INVALID", last, i, j))
                    return toks
                append(("NUMBER", last, i, j))
                i = j
            else:
                append((".", None, i, i + 1))
                i += 1
            continue

        if c == '"':
            what, pos, extra = _scan_string_body(src, n, i + 1)
            if what == '"':
                last = src[i : pos + 1]
                append(("STRING", decode_string(src[i + 1 : pos]), i, pos + 1))
                i = pos + 1
            elif what == "(":
                append(("STRSTART", last, i, i + 1))
                i += 1
                in_string = True
            elif what == "badesc":
                append(("BADESC", None, pos, extra))
                return toks
            else:
                append(("UNTERM", None, i, n))
                return toks
            continue

        if c == "$":
            if c2 and c2 in _IDENT_START:
                j = _end(_IDENT, src, i + 1)
                if src.startswith("::", j) and j + 2 < n and src[j + 2] in _IDENT_START:
                    j = _end(_IDENT, src, j + 2)
                    last = src[i:j]
                    append(("MODVAR", last, i, j))
                else:
                    last = src[i:j]
                    append(("VAR", last, i, j))
                i = j
                continue
        elif c == "|":
            if c2 == "=":
                last = "|="
                append(("UPDATEOP", "|=", i, i + 2))
                i += 2
                continue
        elif c == "?":
            if c2 == "/" and src.startswith("//", i + 1):
                last = "?//"
                append(("DESTALT", "?//", i, i + 3))
                i += 3
                continue
        elif c == "+" or c == "-" or c == "*" or c == "%":
            if c2 == "=":
                last = c + "="
                append(("UPDATEOP", last, i, i + 2))
                i += 2
                continue
        elif c == "/":
            if c2 == "=":
                last = "/="
                append(("UPDATEOP", "/=", i, i + 2))
                i += 2
                continue
            if c2 == "/":
                if i + 2 < n and src[i + 2] == "=":
                    last = "//="
                    append(("UPDATEOP", "//=", i, i + 3))
                    i += 3
                else:
                    last = "//"
                    append(("ALTOP", "//", i, i + 2))
                    i += 2
                continue
        elif c == "=":
            if c2 == "=":
                last = "=="
                append(("CMPOP", "==", i, i + 2))
                i += 2
            else:
                last = "="
                append(("UPDATEOP", "=", i, i + 1))
                i += 1
            continue
        elif c == "!":
            if c2 == "=":
                last = "!="
                append(("CMPOP", "!=", i, i + 2))
                i += 2
                continue
        elif c == "<" or c == ">":
            if c2 == "=":
                last = c + "="
                append(("CMPOP", last, i, i + 2))
                i += 2
            else:
                last = c
                append(("CMPOP", c, i, i + 1))
                i += 1
            continue
        elif c == "@":
            if c2 and c2 in _IDENT_CHARS:
                j = _end(_IDENT_TAIL, src, i + 1)
                last = src[i:j]
                append(("FORMAT", last, i, j))
                i = j
                continue
        elif c == "(":
            if stack:
                stack[-1] += 1
        elif c == ")" and stack:
            if stack[-1] == 0:
                stack.pop()
                in_string = True
            else:
                stack[-1] -= 1
        # Any other character is a token of its own.  gojq keeps ``l.token``
        # stale for ASCII characters but sets it to the rune otherwise.
        if c >= "\x80":
            last = c
        append((c, None, i, i + 1))
        i += 1
