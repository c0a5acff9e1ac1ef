"""Exact Kubernetes ``resource.Quantity`` in pure Python.

A port of the behaviour of k8s.io/apimachinery/pkg/api/resource (quantity.go,
suffix.go): the same grammar, the same rounding (values finer than 1n round
away from zero to 1n, BinarySI parses are capped at 2^63-1), the same
``Value()``/``MilliValue()`` round-up, the same ``Add`` format rule and the same
``String()`` output -- including the cached original text that ``ParseQuantity``
keeps when the input already is in canonical form (so ``"1E6"`` prints as
``"1E6"`` and ``"+1"`` as ``"+1"``, exactly like apimachinery).

Values are held exactly, in nano-units: an int for every parsed quantity (parsing
rounds to 1n), a :class:`fractions.Fraction` only for a finer value built
directly (always a finite decimal: ``int * 10**k * 2**j``), so no float ever
enters the arithmetic and the usual sums are int sums (~50x cheaper than
Fraction's).

Deliberate deviations (all far outside anything a manifest contains):
decimal exponents beyond +-10000 and numbers longer than Python's int-string
limit are rejected instead of being carried; BinarySI values above ``Ei`` keep
``Ei`` as the largest suffix (apimachinery would drop the suffix).
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from fractions import Fraction

DECIMAL_SI = "DecimalSI"  # e.g. 12M  (12 * 10^6)
BINARY_SI = "BinarySI"  # e.g. 12Mi (12 * 2^20)
DECIMAL_EXPONENT = "DecimalExponent"  # e.g. 12e6
FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_BY_POW1024 = {0: "", **{e // 10: s for s, e in _BIN_SUFFIXES.items()}}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 64) accepts
_NANO = 10**9
_MAX_INT64 = 2**63 - 1
_MAX_EXPONENT = 10_000


class QuantityError(ValueError):
    """A string (or number) that apimachinery would refuse to parse."""


def _finite_decimal(value: Fraction) -> bool:
    den = value.denominator
    den >>= (den & -den).bit_length() - 1  # strip factors of 2
    while den % 5 == 0:
        den //= 5
    return den == 1


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """(m, e) with value == m * 10**e and m free of trailing zeros; value > 0."""
    num, den = value.numerator, value.denominator
    exp = 0
    if den != 1:
        twos = (den & -den).bit_length() - 1
        fives, rest = 0, den >> twos
        while rest % 5 == 0:
            rest //= 5
            fives += 1
        k = max(twos, fives)
        num, exp = num * 10**k // den, -k
    while num % 10 == 0:
        num //= 10
        exp += 1
    return num, exp


def _exact(nanos: int | Fraction) -> int | Fraction:
    """Nano-units as an int when they are whole (as every parsed quantity is)."""
    return nanos.numerator if type(nanos) is not int and nanos.denominator == 1 else nanos


@functools.lru_cache(maxsize=8192)  # pure; totals repeat the same few values
def _canonical(nanos: int | Fraction, fmt: str) -> str:
    """apimachinery CanonicalizeBytes: no precision lost, largest possible suffix."""
    if nanos == 0:
        return "0"
    value = Fraction(nanos, _NANO)
    sign, mag = ("-" if value < 0 else ""), abs(value)
    if fmt == BINARY_SI:
        if mag < 1024 or mag.denominator != 1:
            fmt = DECIMAL_SI  # small or fractional binary values print as DecimalSI
        else:
            m, k = int(mag), 0
            while m % 1024 == 0 and k < 6:
                m, k = m // 1024, k + 1
            return f"{sign}{m}{_BIN_BY_POW1024[k]}"
    elif fmt not in (DECIMAL_SI, DECIMAL_EXPONENT):
        fmt = DECIMAL_EXPONENT  # unknown formats print as exponents (as in Go)
    m, e = _decimal_parts(mag)
    r = e % 3  # lower the exponent to a multiple of three
    m, e = m * 10**r, e - r
    if fmt == DECIMAL_SI and e in _DEC_BY_EXP:
        return f"{sign}{m}{_DEC_BY_EXP[e]}"
    return f"{sign}{m}" + (f"e{e}" if e else "")  # DecimalSI has no suffix beyond n..E


class Quantity:
    """An exact, immutable resource quantity with its apimachinery Format."""

    __slots__ = ("_format", "_n", "_s")
    _n: int | Fraction  # the value in nano-units (see _exact)
    _format: str
    _s: str | None  # the text it was parsed from, or its canonical form once asked

    def __init__(self, value: int | Fraction = 0, format: str = DECIMAL_SI) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise TypeError(f"Quantity value must be int or Fraction, not {type(value).__name__}")
        value = Fraction(value)
        if not _finite_decimal(value):
            raise ValueError(f"{value} has no finite decimal representation")
        if format not in FORMATS:
            raise ValueError(f"unknown quantity format {format!r}")
        self._n, self._format, self._s = _exact(value * _NANO), format, None

    @classmethod
    def _make(cls, nanos: int | Fraction, fmt: str, s: str | None = None) -> Quantity:
        q = object.__new__(cls)
        q._n, q._format, q._s = _exact(nanos), fmt, s
        return q

    # --- accessors -----------------------------------------------------------------
    @property
    def amount(self) -> Fraction:
        """The exact value."""
        return Fraction(self._n, _NANO)

    @property
    def format(self) -> str:
        return self._format

    def is_zero(self) -> bool:
        return self._n == 0

    def sign(self) -> int:
        return (self._n > 0) - (self._n < 0)

    def scaled_value(self, scale: int) -> int:
        """ScaledValue: value / 10**scale rounded up, away from zero."""
        n, k = self._n, scale + 9  # value / 10**scale == n / 10**k
        if type(n) is int:
            if k <= 0:
                return n * 10**-k
            d = 10**k
            return -(-n // d) if n >= 0 else n // d
        x = n / Fraction(10) ** k
        return math.ceil(x) if x >= 0 else -math.ceil(-x)

    def value(self) -> int:
        """Value(): the integer value rounded up (500m -> 1)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """MilliValue(): value * 1000 rounded up (0.0001 -> 1)."""
        return self.scaled_value(-3)

    # --- arithmetic (apimachinery Add/Sub/Mul/Neg: results drop the cached text) ----
    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other._format if self._n == 0 else self._format  # Add keeps q's format unless q is zero
        return Quantity._make(self._n + other._n, fmt)

    def __radd__(self, other: object) -> Quantity:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return Quantity() + self  # lets sum() start from 0
        return NotImplemented

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other._format if self._n == 0 else self._format
        return Quantity._make(self._n - other._n, fmt)

    def __neg__(self) -> Quantity:
        return Quantity._make(-self._n, self._format)

    def __mul__(self, n: int) -> Quantity:
        if isinstance(n, bool) or not isinstance(n, int):
            return NotImplemented
        return Quantity._make(self._n * n, self._format)

    __rmul__ = __mul__

    # --- comparison (apimachinery Cmp/Equal compare values, never formats) -----------
    @staticmethod
    def _other(other: object) -> int | Fraction | None:
        """`other` in nano-units, to compare with _n."""
        if isinstance(other, Quantity):
            return other._n
        if isinstance(other, (int, Fraction)) and not isinstance(other, bool):
            return other * _NANO
        return None

    def cmp(self, other: Quantity) -> int:
        o = self._other(other)
        if o is None:
            raise TypeError(f"cannot compare Quantity with {type(other).__name__}")
        return (self._n > o) - (self._n < o)

    def __eq__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self._n == o

    def __lt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self._n < o

    def __le__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self._n <= o

    def __gt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self._n > o

    def __ge__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self._n >= o

    def __hash__(self) -> int:
        return hash(self.amount)  # equal to the hash of an equal int or Fraction

    def __bool__(self) -> bool:
        return self._n != 0

    # --- text -------------------------------------------------------------------------
    def canonical(self) -> str:
        """The canonical form, ignoring any text cached from parsing."""
        return _canonical(self._n, self._format)

    def __str__(self) -> str:
        """apimachinery String(): cached parse text if canonical, else canonical form."""
        if self._s is None:
            self._s = self.canonical()
        return self._s

    def __repr__(self) -> str:
        return f"<Quantity {self} {self._format}>"


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value text, numerator, denominator, suffix)."""
    positive, pos, end = True, 0, len(s)
    if end and s[0] in "+-":
        positive, pos = s[0] == "+", 1
    while pos < end and s[pos] == "0":  # strip leading zeros
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    num = s[start:pos] or "0"
    if pos >= end:
        return positive, s, num, "", ""
    denom = ""
    if s[pos] == ".":  # "1." and "." are accepted, as in Go
        start = pos = pos + 1
        while pos < end and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
        if pos >= end:
            return positive, s, num, denom, ""
    value, suffix_start = s[:pos], pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, s[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """suffixHandler.interpret: (base, exponent, format)."""
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _GO_INT.fullmatch(suffix[1:]):
        parsed = int(suffix[1:])
        if -(2**63) <= parsed <= _MAX_INT64:
            exp = (parsed + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
            if abs(exp) > _MAX_EXPONENT:
                raise QuantityError(f"quantity exponent {exp} is out of the supported range")
            return 10, exp, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


@functools.lru_cache(maxsize=8192)  # Quantity is immutable; manifests repeat the same strings
def _parse_string(s: str) -> Quantity:
    """ParseQuantity."""
    if not s:
        raise QuantityError(ERR_FORMAT_WRONG)
    if s == "0":
        return Quantity._make(0, DECIMAL_SI, "0")
    positive, value_text, num, denom, suffix = _scan(s)
    base, exponent, fmt = _interpret(suffix)
    try:
        shifted = int(num + denom)
    except ValueError:  # longer than Python's int-string limit
        raise QuantityError(ERR_NUMERIC) from None

    # The int64 fast path: the value is exact and the text may be kept as String().
    if fmt == BINARY_SI:
        precision = 15 - len(num) - exponent * 3 // 10 - 1 if not denom else -1
        scale, mantissa = 0, 2**exponent
    else:
        precision, scale, mantissa = 18 - len(num) - len(denom), exponent, 1
    if precision >= 0 and scale - len(denom) >= -9 and shifted * mantissa <= _MAX_INT64:
        scale -= len(denom)
        nanos = shifted * mantissa * 10 ** (scale + 9)  # scale >= -9: a whole number of nanos
        digits = num + denom
        if fmt == BINARY_SI:
            canonical = shifted & 7 != 0
        else:
            canonical = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
        return Quantity._make(nanos if positive else -nanos, fmt, s if canonical else None)

    # The inf.Dec path: round finer-than-nano magnitudes up, cap BinarySI at 2^63-1.
    if not _DIGITS.intersection(value_text):
        raise QuantityError(ERR_NUMERIC)
    mag = Fraction(shifted, 10 ** len(denom)) * (Fraction(10) ** exponent if base == 10 else 2**exponent)
    nanos = math.ceil(mag * _NANO)
    if fmt == BINARY_SI and nanos > _MAX_INT64 * _NANO:
        nanos = _MAX_INT64 * _NANO
    if fmt == BINARY_SI and 0 < nanos < _NANO:
        fmt = DECIMAL_SI
    return Quantity._make(nanos if positive else -nanos, fmt)


def parse_quantity(value: object) -> Quantity:
    """Parse like apimachinery ParseQuantity; numbers are read as their JSON text.  Raises
    QuantityError for anything else (a boolean, a list, ...)."""
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str):
        return _parse_string(value)
    if isinstance(value, bool):
        raise QuantityError(f"a boolean is not a quantity: {value!r}")
    if isinstance(value, int):
        return _parse_string(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(ERR_FORMAT_WRONG)
        return _parse_string(repr(value))  # repr is the shortest text that round-trips
    if isinstance(value, Decimal):
        return _parse_string(str(value))
    raise QuantityError(f"cannot parse {type(value).__name__} as a quantity")


def format_quantity(q: Quantity | str | int | float) -> str:
    """apimachinery String() of q (parsing it first if needed)."""
    return str(parse_quantity(q))


def millicores_to_quantity(millicores: int) -> Quantity:
    """A CPU millicore count as a DecimalSI quantity (4000 -> 4, 500 -> 500m)."""
    return Quantity(Fraction(millicores, 1000), DECIMAL_SI)


def bytes_to_quantity(nbytes: int) -> Quantity:
    """A byte count, BinarySI when a whole number of Ki (16Gi), else DecimalSI (70M)."""
    binary = nbytes != 0 and nbytes % 1024 == 0
    return Quantity(nbytes, BINARY_SI if binary else DECIMAL_SI)


def format_millicores(millicores: int) -> str:
    return str(millicores_to_quantity(millicores))


def format_bytes(nbytes: int) -> str:
    return str(bytes_to_quantity(nbytes))
