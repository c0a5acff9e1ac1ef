"""Tests for app.engine.quantity; expectations come from apimachinery's quantity_test.go."""

from decimal import Decimal
from fractions import Fraction

import pytest

from app.engine.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    bytes_to_quantity,
    format_bytes,
    format_millicores,
    format_quantity,
    millicores_to_quantity,
    parse_quantity,
)

# (input, String() after ParseQuantity, Format)
PARSE_EMIT = [
    # canonical inputs are echoed back (TestQuantityString "expect" column)
    ("0", "0", DECIMAL_SI),
    ("1", "1", DECIMAL_SI),
    ("1Ki", "1Ki", BINARY_SI),
    ("1Mi", "1Mi", BINARY_SI),
    ("1Gi", "1Gi", BINARY_SI),
    ("2Gi", "2Gi", BINARY_SI),
    ("6Ki", "6Ki", BINARY_SI),
    ("300Mi", "300Mi", BINARY_SI),
    ("1001Gi", "1001Gi", BINARY_SI),
    ("1025", "1025", DECIMAL_SI),
    ("1G", "1G", DECIMAL_SI),
    ("300M", "300M", DECIMAL_SI),
    ("1T", "1T", DECIMAL_SI),
    ("1E", "1E", DECIMAL_SI),
    ("12E", "12E", DECIMAL_SI),
    ("3k", "3k", DECIMAL_SI),
    ("50k", "50k", DECIMAL_SI),
    ("1234567M", "1234567M", DECIMAL_SI),
    ("1m", "1m", DECIMAL_SI),
    ("80m", "80m", DECIMAL_SI),
    ("1500m", "1500m", DECIMAL_SI),
    ("1080m", "1080m", DECIMAL_SI),
    ("1u", "1u", DECIMAL_SI),
    ("1080u", "1080u", DECIMAL_SI),
    ("1n", "1n", DECIMAL_SI),
    ("80n", "80n", DECIMAL_SI),
    ("1e9", "1e9", DECIMAL_EXPONENT),
    ("1e-3", "1e-3", DECIMAL_EXPONENT),
    ("80e-3", "80e-3", DECIMAL_EXPONENT),
    ("300e6", "300e6", DECIMAL_EXPONENT),
    ("129e6", "129e6", DECIMAL_EXPONENT),
    ("128974848", "128974848", DECIMAL_SI),
    ("129M", "129M", DECIMAL_SI),
    ("123Mi", "123Mi", BINARY_SI),
    ("12345678901", "12345678901", DECIMAL_SI),
    # non-canonical inputs are re-emitted canonically ("alternate" column, TestQuantityParseEmit)
    ("1000m", "1", DECIMAL_SI),
    ("5000m", "5", DECIMAL_SI),
    ("1.5", "1500m", DECIMAL_SI),
    ("0.5", "500m", DECIMAL_SI),
    ("0.1", "100m", DECIMAL_SI),
    (".5", "500m", DECIMAL_SI),
    ("1.08", "1080m", DECIMAL_SI),
    ("1080000000n", "1080m", DECIMAL_SI),
    ("1000u", "1m", DECIMAL_SI),
    ("0.0001", "100u", DECIMAL_SI),
    ("1000M", "1G", DECIMAL_SI),
    ("0.001T", "1G", DECIMAL_SI),
    ("1024Mi", "1Gi", BINARY_SI),
    ("307200Ki", "300Mi", BINARY_SI),
    ("1025024Mi", "1001Gi", BINARY_SI),
    ("1024Gi", "1Ti", BINARY_SI),
    ("8Ki", "8Ki", BINARY_SI),
    ("1536Mi", "1536Mi", BINARY_SI),
    ("1.5Gi", "1536Mi", BINARY_SI),
    ("0.5Mi", "512Ki", BINARY_SI),
    ("0.5Ki", "512", BINARY_SI),
    (".001Ki", "1024m", BINARY_SI),
    (".000001Ki", "1024u", DECIMAL_SI),  # below 1 a BinarySI parse becomes DecimalSI
    (".000000001Ki", "1024n", DECIMAL_SI),
    (".000000000001Ki", "2n", DECIMAL_SI),  # rounds up, changes format
    ("0.05Gi", "53687091200m", BINARY_SI),  # fractional bytes fall back to DecimalSI text
    ("100.035Ki", "102435840m", BINARY_SI),
    (".001e12", "1e9", DECIMAL_EXPONENT),
    ("0.001e0", "1e-3", DECIMAL_EXPONENT),
    ("1000e-12", "1e-9", DECIMAL_EXPONENT),
    ("1e14", "100e12", DECIMAL_EXPONENT),
    ("1e13", "10e12", DECIMAL_EXPONENT),
    ("1.2e3", "1200", DECIMAL_EXPONENT),
    ("1.3E+6", "1300e3", DECIMAL_EXPONENT),
    ("0.5e-1", "50e-3", DECIMAL_EXPONENT),
    ("100.035k", "100.035k", DECIMAL_SI),  # scale 0 & no trailing "000": text kept
    ("10.035M", "10.035M", DECIMAL_SI),
    ("100.5k", "100500", DECIMAL_SI),
    ("10.5M", "10500k", DECIMAL_SI),
    ("9.01", "9010m", DECIMAL_SI),
    ("8.1k", "8100", DECIMAL_SI),
    ("2.5P", "2500T", DECIMAL_SI),
    ("1.01E", "1010P", DECIMAL_SI),
    ("1000E", "1e21", DECIMAL_SI),  # no DecimalSI suffix beyond E
    ("5000E", "5e21", DECIMAL_SI),
    # saturation / rounding to the nano grid
    ("3.001n", "4n", DECIMAL_SI),
    ("1.1E-9", "2e-9", DECIMAL_EXPONENT),
    ("0.0000000001", "1n", DECIMAL_SI),
    ("0.9n", "1n", DECIMAL_SI),
    ("0.00000012345", "124n", DECIMAL_SI),
    ("9Ei", "9223372036854775807", BINARY_SI),  # BinarySI is capped at 2^63-1
    ("9223372036854775807Ki", "9223372036854775807", BINARY_SI),
    # zeros never carry a suffix
    ("0m", "0", DECIMAL_SI),
    ("0Ki", "0", BINARY_SI),
    ("00", "0", DECIMAL_SI),
    ("-0", "0", DECIMAL_SI),
    # signs
    ("-1Ki", "-1Ki", BINARY_SI),
    ("-1024Mi", "-1Gi", BINARY_SI),
    ("-0.1", "-100m", DECIMAL_SI),
]


@pytest.mark.parametrize(("text", "expected", "fmt"), PARSE_EMIT)
def test_parse_emit(text, expected, fmt):
    q = parse_quantity(text)
    assert str(q) == expected
    assert format_quantity(q) == expected
    assert q.format == fmt


def test_table_is_large_enough():
    assert len(PARSE_EMIT) >= 40


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [
        # apimachinery keeps the original text when it is already "canonical enough"
        ("1E6", "1E6", "1e6"),
        ("1E-3", "1E-3", "1e-3"),
        ("+1", "+1", "1"),
        ("1.", "1.", "1"),
        ("1.G", "1.G", "1G"),
    ],
)
def test_cached_parse_text_like_apimachinery(text, expected, canonical):
    q = parse_quantity(text)
    assert str(q) == expected
    assert q.canonical() == canonical
    assert str(q + Quantity()) == canonical  # arithmetic drops the cached text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1E-3", Fraction(1, 1000)),
        ("1e3", 1000),
        ("1E18", 10**18),
        ("0.0005k", Fraction(1, 2)),
        ("0.00500", Fraction(5, 1000)),
        ("7.123456M", 7123456),
        ("6.987654321G", 6987654321),
        ("0.025Ti", Fraction(274877906944, 10)),
        ("3Ei", 3 * 2**60),
        ("12e-3", Fraction(12, 1000)),
        ("1.", 1),
        (".", 0),
        ("0.5e0", Fraction(1, 2)),
    ],
)
def test_parse_exact_values(text, value):
    q = parse_quantity(text)
    assert q.amount == value
    assert parse_quantity("-" + text).amount == -value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("0.1am", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        ("Non-Numeric", ERR_FORMAT_WRONG),
        (" 1", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        ("0.1mi", ERR_SUFFIX),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        ("1K", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        (".e-10", ERR_NUMERIC),
    ],
)
def test_invalid(text, message):
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


def test_error_message_names_the_regex():
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize("bad", [True, None, float("nan"), float("inf"), [1]])
def test_invalid_types(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


@pytest.mark.parametrize(
    ("number", "expected"),
    [(2, "2"), (0, "0"), (4000, "4k"), (0.5, "500m"), (1.5, "1500m"), (0.1, "100m"), (-1, "-1"), (1e-05, "10e-6")],
)
def test_json_numbers_parse_as_their_text(number, expected):
    assert str(parse_quantity(number)) == expected


def test_decimal_and_quantity_inputs():
    assert str(parse_quantity(Decimal("1.5"))) == "1500m"
    q = parse_quantity("2Gi")
    assert parse_quantity(q) is q


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("500m", 1, 500),
        ("1.5", 2, 1500),
        ("0.0001", 1, 1),
        ("1n", 1, 1),
        ("1Ki", 1024, 1024000),
        ("1.5Gi", 1610612736, 1610612736000),
        ("0", 0, 0),
        ("-1.5", -2, -1500),  # rounded away from zero
    ],
)
def test_value_and_milli_value_round_up(text, value, milli):
    q = parse_quantity(text)
    assert q.value() == value
    assert q.milli_value() == milli


def test_add_keeps_first_operand_format():
    assert str(parse_quantity("1Gi") + parse_quantity("1M")) == "1074741824"
    assert (parse_quantity("1Gi") + parse_quantity("1M")).format == BINARY_SI
    assert str(parse_quantity("1M") + parse_quantity("1Mi")) == "2048576"
    assert str(parse_quantity("1Gi") + parse_quantity("512Mi")) == "1536Mi"
    assert str(parse_quantity("1") + parse_quantity("500m")) == "1500m"
    assert str(parse_quantity("4Gi") + parse_quantity("128Mi")) == "4224Mi"


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_add_zero_preserves_suffix(text):
    zero, value = parse_quantity("0"), parse_quantity(text)
    assert str(value + zero) == text
    assert str(zero + value) == text
    assert (zero + value).format == value.format
    assert str(sum([value, value])) == str(value * 2)


def test_sub_and_neg():
    assert str(parse_quantity("1Gi") - parse_quantity("512Mi")) == "512Mi"
    assert str(-parse_quantity("9.01")) == "-9010m"
    assert str(parse_quantity("0") - parse_quantity("1Gi")) == "-1Gi"


def test_multiply_by_int():
    assert str(parse_quantity("1536Mi") * 2) == "3Gi"
    assert str(3 * parse_quantity("500m")) == "1500m"
    assert str(parse_quantity("129e6") * 0) == "0"
    with pytest.raises(TypeError):
        parse_quantity("1") * 1.5


def test_comparison_and_equality_ignore_format():
    assert parse_quantity("1Ki") == parse_quantity("1024")
    assert parse_quantity("1000m") == parse_quantity("1")
    assert hash(parse_quantity("1000m")) == hash(parse_quantity("1e0"))
    assert parse_quantity("10000T") > parse_quantity("100Gi")
    assert parse_quantity("50m") < parse_quantity("100m")
    assert max(parse_quantity("1"), parse_quantity("1500m")) == parse_quantity("1.5")
    assert parse_quantity("100m").cmp(parse_quantity("50m")) == 1
    assert parse_quantity("0").cmp(parse_quantity("0m")) == 0
    assert parse_quantity("2") == 2
    assert parse_quantity("500m") == Fraction(1, 2)
    assert not parse_quantity("0")
    assert parse_quantity("0").is_zero()
    assert parse_quantity("-1").sign() == -1


def test_constructor():
    assert str(Quantity(1024, BINARY_SI)) == "1Ki"
    assert str(Quantity(1000, DECIMAL_SI)) == "1k"
    assert str(Quantity(1000000, DECIMAL_EXPONENT)) == "1e6"
    assert str(Quantity(Fraction(1024, 1000), BINARY_SI)) == "1024m"
    assert str(Quantity()) == "0"
    with pytest.raises(ValueError):
        Quantity(Fraction(1, 3))
    with pytest.raises(ValueError):
        Quantity(1, "Bogus")


def test_values_finer_than_a_nano_stay_exact():
    # Parsed quantities are whole nanos (held as ints); a finer value built directly is held as
    # a Fraction, and arithmetic mixing the two stays exact.
    fine = Quantity(Fraction(1, 2**40))
    total = fine + parse_quantity("1") + fine * 3
    assert total.amount == 1 + Fraction(4, 2**40)
    assert str(total) == "1000000000003637978807091712951660156250e-39"
    assert total - fine * 4 == 1 and str(fine * 2**40) == "1"
    assert fine < parse_quantity("1n") and fine.milli_value() == 1 and (-fine).value() == -1
    assert hash(fine * 2**40) == hash(1) and hash(parse_quantity("500m")) == hash(Fraction(1, 2))
    assert type(parse_quantity("2").amount) is Fraction


@pytest.mark.parametrize(("millis", "expected"), [(4000, "4"), (500, "500m"), (1500, "1500m"), (0, "0"), (100000, "100")])
def test_format_millicores(millis, expected):
    assert format_millicores(millis) == expected
    assert millicores_to_quantity(millis).milli_value() == millis


@pytest.mark.parametrize(
    ("nbytes", "expected"),
    [
        (17179869184, "16Gi"),
        (70000000, "70M"),
        (1024, "1Ki"),
        (1536 * 2**20, "1536Mi"),
        (1536, "1536"),
        (0, "0"),
        (128974848, "123Mi"),
        (129000000, "129M"),
    ],
)
def test_format_bytes(nbytes, expected):
    assert format_bytes(nbytes) == expected
    assert bytes_to_quantity(nbytes).value() == nbytes
