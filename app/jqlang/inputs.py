"""What the expressions of one evaluation read: the object itself for native programs, its JSON
text for libjq (built only when an expression needs libjq), and a key for reusing results.

Native programs read the object as it is, with no copy, no JSON text and no parse, when that
gives exactly what the text would: plain JSON values (as the document loaders, the HTTP body
and the API server give), integers within 2^53 and no integral floats.  One orjson dump of the parts the
expressions can read vouches for that at C speed and is the result cache's key as well.  Any
other object (an integral float, which libjq prints back as an integer; an integer beyond
float64; a Python value JSON has no word for) takes the text path: projected, normalised,
parsed back, as before.  (NaN and infinities never get here: the document loaders refuse them
and the JSON parsers do not make them.)
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .paths import Tree, project
from .values import normalize

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def strip_noise(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what no expression reads but doubles the size jq must parse (shallow copies)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or (
        "managedFields" not in meta and LAST_APPLIED not in (meta.get("annotations") or {})
    ):
        return obj
    meta = dict(meta)
    meta.pop("managedFields", None)
    ann = meta.get("annotations")
    if isinstance(ann, dict) and LAST_APPLIED in ann:
        meta["annotations"] = {k: v for k, v in ann.items() if k != LAST_APPLIED}
    return dict(obj, metadata=meta)


# Integral floats (orjson prints 2.0 as "2.0") and integers beyond 2^53: the only numbers whose
# text differs from what the reference's float64 round trip gives.  Rare, so look before walking.
# (A literal first character keeps Python's re at memchr speed: 5 us over 5 KB, against 70 us for
# a pattern that starts with a class.  Text inside strings can match too ("v1.0,"): a walk for
# nothing.)
_POINT_ZERO = re.compile(rb"\.0[,}\]]")
_DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER  # ints beyond 2^53 raise: normalise them
_EXPONENT = re.compile(r"[0-9][eE]")  # a number in exponent form (or text that looks like one)


def input_text(obj: Any, strip: bool, projection: Tree | bool = True) -> str:
    """The JSON text jq parses: only what expressions can read (`projection`), else without
    the API server's bookkeeping; gojq-equivalent numbers; sorted keys (gojq iterates sorted)."""
    if projection is not True and isinstance(obj, dict):
        obj = project(obj, projection)
    elif strip and isinstance(obj, dict):
        obj = strip_noise(obj)
    try:
        raw = orjson.dumps(obj, option=_DUMP)
    except TypeError:  # an integer beyond 2^53: the reference sees it through float64
        raw = b""
    if not raw or _point_zero(raw):
        raw = orjson.dumps(normalize(obj), option=orjson.OPT_SORT_KEYS)
    return raw.decode()


def _point_zero(raw: bytes) -> bool:
    """An integral float below 1e16 in orjson's text ("2.0", or a bare 3.0)."""
    return _POINT_ZERO.search(raw) is not None or raw.endswith(b".0")


# Plain JSON only: a datetime, a str/int/dict/list subclass or a dataclass raises instead of
# being converted, and so does an integer beyond 2^53.
_PLAIN = (
    orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _integral_float(raw: bytes) -> bool:
    """An integral float: "2.0", or 1e16 as "1e+16".  Native programs would output it as a float
    where libjq's text prints an integer (other floats read and print alike on both paths); a
    match inside a string only sends that object down the text path."""
    # (`b"+" in` first: a search for "e+" trips on every "e" of the text, 5 us per 5 KB)
    return _point_zero(raw) or (b"+" in raw and b"e+" in raw)


def _parts(obj: dict[str, Any], projection: Tree) -> dict[str, Any]:
    """What needs vouching for: native programs read only the projection's paths, so its parts
    two levels down suffice (`metadata.labels`, not the managedFields beside it); deeper, the
    whole subtree is dumped, which costs less than walking the projection in Python."""
    out: dict[str, Any] = {}
    for k, sub in projection.items():
        if k not in obj:
            continue
        v = obj[k]
        if sub is True or type(v) is not dict or None in sub:
            out[k] = v
        else:
            out[k] = {k2: v[k2] for k2 in sub if k2 in v}
    return out


class Input:
    """One evaluation's input.  `value` is what native programs read; `text()` what libjq
    parses; `key` is equal for inputs that give equal results; `exponents` says outputs must be
    normalised as libjq's text would print them (only on the text path)."""

    __slots__ = ("_source", "_text", "exponents", "key", "value")

    def __init__(
        self,
        value: Any,
        key: bytes | str,
        exponents: bool,
        text: str | None,
        source: tuple[Any, bool, Tree | bool] | None = None,
    ):
        self.value, self.key, self.exponents, self._text, self._source = value, key, exponents, text, source

    def text(self) -> str:
        if self._text is None:
            assert self._source is not None, "an Input has its text or the object to make it of"
            obj, strip, projection = self._source
            self._text = input_text(obj, strip, projection)
        return self._text

    @classmethod
    def of_text(cls, text: str) -> Input:
        return cls(orjson.loads(text), text, _EXPONENT.search(text) is not None, text)


def exact(data: bytes) -> bytes:
    """`data` in a bytes object of its own size.  orjson returns its writer's buffer, several KB
    beyond the text (a 1.8 KB pod body held 8 KB): anything kept long, copy through this."""
    return bytes(memoryview(data))


def prepare(obj: Any, strip: bool, projection: Tree | bool = True) -> Input:
    """The input for evaluating expressions (that read `projection` of it) over `obj`.
    Raises OverflowError/TypeError/ValueError when no JSON text can be made of it."""
    view = strip_noise(obj) if strip and projection is True and isinstance(obj, dict) else obj
    parts = _parts(view, projection) if isinstance(view, dict) and isinstance(projection, dict) else view
    try:
        raw = exact(orjson.dumps(parts, option=_PLAIN))  # inputs are kept, as cache keys
    except TypeError:
        raw = b""
    if not raw or _integral_float(raw):
        return Input.of_text(input_text(obj, strip, projection))
    return Input(view, raw, False, None, (obj, strip, projection))
