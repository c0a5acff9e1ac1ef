"""Errors raised by the jq-language parser."""

from __future__ import annotations

__all__ = ["JqParseError"]


class JqParseError(ValueError):
    """A jq query failed to parse.

    ``str(err)`` is exactly what gojq's ``ParseError.Error()`` returns, i.e. the
    text the gojq CLI prints after the caret (``unexpected EOF``,
    ``unexpected token "=="``, ``invalid token "1a"``,
    ``unterminated string literal``,
    ``invalid escape sequence "\\x" in string literal``).

    Attributes:
        message: the gojq-compatible message (same as ``str(err)``).
        offset: gojq's ``ParseError.Offset``: the number of UTF-8 *bytes* of the
            query that had been scanned when the error was detected (the end of
            the offending token).
        token: gojq's ``ParseError.Token``: the offending token text as gojq
            reports it ("" at end of input).
        pos: character index (into the Python string) where the offending token
            starts; handy for drawing a caret.
    """

    def __init__(self, message: str, offset: int = -1, token: str = "", pos: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.token = token
        self.pos = pos

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message

    def __reduce__(self):  # keep picklable with the extra attributes
        return (type(self), (self.message, self.offset, self.token, self.pos))
