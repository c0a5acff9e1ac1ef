"""Value conversions that must match the Go reference (gojq + encoding/json + fmt) exactly.

- `gojq_tostring`: what `tostring` gives under gojq (strings as is, sorted compact JSON,
  gojq number printing) - the text `byExpression.expectedResult` is compared with.
- `go_v`: Go `%v` of a JSON value (instance ids, group keys): `3`, `1e+21`, `true`.
- `to_int32`: the scale reading (numbers must be whole int32s; strings parse base-10).
- `normalize`: the JSON round trip the reference applies to every source object (all numbers
  are float64), expressed so libjq prints them the way gojq does.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_DEC_INT = re.compile(r"[+-]?[0-9]+\Z")


class ConversionError(ValueError):
    pass


def _shortest_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits and decimal-point position (as Go's strconv computes)."""
    _, digits, exp = Decimal(repr(abs(f))).normalize().as_tuple()
    assert isinstance(exp, int), "finite numbers only (JSON has no NaN or infinity)"
    ds = "".join(map(str, digits)) or "0"
    return ds, len(ds) + exp  # dp: position of the decimal point


def _fmt_f(f: float) -> str:
    ds, dp = _shortest_digits(f)
    sign = "-" if f < 0 else ""
    if ds == "0":
        return "0" if not math.copysign(1, f) < 0 else "-0"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{ds}"
    if dp >= len(ds):
        return f"{sign}{ds}{'0' * (dp - len(ds))}"
    return f"{sign}{ds[:dp]}.{ds[dp:]}"


def _fmt_e(f: float, min_exp_digits: int = 2) -> str:
    ds, dp = _shortest_digits(f)
    sign = "-" if f < 0 else ""
    exp = dp - 1
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    esign = "-" if exp < 0 else "+"
    return f"{sign}{mant}e{esign}{abs(exp):0{min_exp_digits}d}"


def gojq_number(v: int | float) -> str:
    """gojq's encoder for a float64: 'f' format, 'e' outside [1e-6, 1e21), e-07 -> e-7."""
    f = float(v)
    if math.isnan(f):
        return "null"
    if math.isinf(f):
        f = math.copysign(1.7976931348623157e308, f)
    x = abs(f)
    if x != 0 and (x < 1e-6 or x >= 1e21):
        return _fmt_e(f, min_exp_digits=1)
    return _fmt_f(f)


def _gojq_json(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, (int, float)):
        out.append(gojq_number(v))
    elif isinstance(v, str):
        out.append(_json_string(v))
    elif isinstance(v, list):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _gojq_json(x, out)
        out.append("]")
    elif isinstance(v, dict):
        out.append("{")
        for i, k in enumerate(sorted(v)):
            if i:
                out.append(",")
            out.append(_json_string(k))
            out.append(":")
            _gojq_json(v[k], out)
        out.append("}")
    else:  # pragma: no cover - jq only yields JSON values
        out.append(_json_string(str(v)))


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _json_string(s: str) -> str:
    # gojq escapes control characters and, like encoding/json, <, > and & are NOT escaped.
    def esc(ch: str) -> str:
        if ch in _ESCAPES:
            return _ESCAPES[ch]
        o = ord(ch)
        if o < 0x20 or o == 0x7F:
            return f"\\u{o:04x}"
        return ch

    return '"' + "".join(esc(c) for c in s) + '"'


def gojq_tostring(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is True or v is False:  # what byExpression matchers usually yield
        return "true" if v else "false"
    out: list[str] = []
    _gojq_json(v, out)
    return "".join(out)


def go_v(v: Any) -> str:
    """Go fmt `%v` of a value decoded from JSON (numbers are float64)."""
    if v is None:
        return "<nil>"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        if f == 0:
            return "0"
        _, dp = _shortest_digits(f)
        exp = dp - 1
        if exp < -4 or exp >= 6:  # %v is %g with shortest digits: %e when exp < -4 or >= 6
            return _fmt_e(f)
        return _fmt_f(f)
    if isinstance(v, list):
        return "[" + " ".join(go_v(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_v(v[k])}" for k in sorted(v)) + "]"
    return str(v)


def go_json_type(v: Any) -> str:
    """The word encoding/json uses for a JSON value in unmarshal errors."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def to_int32(v: Any, index: int) -> int | None:
    """One scale output: None stays unset; numbers must be whole int32; strings parse base-10."""
    if type(v) is int and INT32_MIN <= v <= INT32_MAX:  # the usual case, first
        return v
    if v is None:
        return None
    if isinstance(v, str):
        if not _DEC_INT.match(v):
            raise ConversionError(f'replicas value "{v}" at index {index} is not a number')
        n = int(v)
        if not INT32_MIN <= n <= INT32_MAX:
            raise ConversionError(f'replicas value "{v}" at index {index} is not a number')
        return n
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConversionError(
            f"failed to convert object at index {index} to type int32: json: cannot unmarshal "
            f"{go_json_type(v)} into Go value of type int32"
        )
    if (isinstance(v, float) and not v.is_integer()) or not INT32_MIN <= v <= INT32_MAX:
        raise ConversionError(
            f"failed to convert object at index {index} to type int32: json: cannot unmarshal "
            f"number {gojq_number(v)} into Go value of type int32"
        )
    return int(v)


_MAX_SAFE = 2**53


def normalize(v: Any) -> Any:
    """Apply the reference's JSON round trip (numbers become float64) in a form that libjq
    prints like gojq: whole floats become ints, huge ints are rounded through float64.
    Returns the same object when nothing changes, so the common case does not copy."""
    t = type(v)
    if t is dict:
        changed = None
        for k, x in v.items():
            y = normalize(x)
            if y is not x:
                if changed is None:
                    changed = dict(v)
                changed[k] = y
        return v if changed is None else changed
    if t is list:
        changed_l = None
        for i, x in enumerate(v):
            y = normalize(x)
            if y is not x:
                if changed_l is None:
                    changed_l = list(v)
                changed_l[i] = y
        return v if changed_l is None else changed_l
    if t is float:
        return int(v) if v.is_integer() and abs(v) <= _MAX_SAFE else v
    if t is int and not -_MAX_SAFE <= v <= _MAX_SAFE:
        f = float(v)  # what float64 keeps of it
        return int(f) if abs(f) < 2**63 else f
    return v
