"""Go/gojq value conversions (app.jqlang.values): gojq `tostring`, Go `%v`, the int32 scale
reading and the JSON round trip of the source object."""

from __future__ import annotations

import pytest

from app.jqlang.values import ConversionError, go_json_type, go_v, gojq_number, gojq_tostring, normalize, to_int32

# -- gojq tostring ------------------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [
    ("Running", "Running"),
    ("", ""),
    ('running "now"', 'running "now"'),
    (True, "true"),
    (False, "false"),
    (None, "null"),
    (3, "3"),
    (3.0, "3"),
    (-3.0, "-3"),
    (0, "0"),
    (0.0, "0"),
    (1.5, "1.5"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1 / 3, "0.3333333333333333"),
    (1e-6, "0.000001"),
    (1e-7, "1e-7"),
    (1.5e-10, "1.5e-10"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (1.2345e22, "1.2345e+22"),
    (1e17, "100000000000000000"),
    (123456789.0, "123456789"),
    (2**53, "9007199254740992"),
    ([1, "a", None], '[1,"a",null]'),
    ([], "[]"),
    ({}, "{}"),
    ({"b": 1, "a": [True]}, '{"a":[true],"b":1}'),
    ({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}'),
    ({"a": "<&>"}, '{"a":"<&>"}'),
    ({"a": "q\"\\\n"}, '{"a":"q\\"\\\\\\n"}'),
    ([3.0, 1e21], "[3,1e+21]"),
])
def test_gojq_tostring(value, text):
    assert gojq_tostring(value) == text


def test_gojq_number_clamps_infinity():
    assert gojq_number(float("inf")) == "1.7976931348623157e+308"
    assert gojq_number(float("-inf")) == "-1.7976931348623157e+308"


def test_gojq_number_nan_is_null():
    assert gojq_number(float("nan")) == "null"


# -- Go %v -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [
    ("train", "train"),
    ("", ""),
    (3.0, "3"),
    (3, "3"),
    (0, "0"),
    (-2.0, "-2"),
    (2.5, "2.5"),
    (1e21, "1e+21"),
    (1e6, "1e+06"),
    (123456.0, "123456"),
    (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"),
    (0.00001, "1e-05"),
    (True, "true"),
    (False, "false"),
    (None, "<nil>"),
    ([1, "a"], "[1 a]"),
    ({"b": 1, "a": "x"}, "map[a:x b:1]"),
])
def test_go_v(value, text):
    assert go_v(value) == text


def test_go_v_is_not_python_str():
    assert go_v(3.0) != str(3.0)
    assert go_v(True) != str(True)


# -- int32 scale reading --------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    (None, None),
    (0, 0),
    (4, 4),
    (4.0, 4),
    (-1, -1),
    ("2", 2),
    ("+2", 2),
    ("-1", -1),
    ("0", 0),
    ("007", 7),
    (2**31 - 1, 2**31 - 1),
    (-(2**31), -(2**31)),
    ("2147483647", 2147483647),
])
def test_to_int32_accepts(value, expected):
    assert to_int32(value, 0) == expected


@pytest.mark.parametrize("value", [" 2", "2 ", "abc", "", "2.0", "1e3", "0x10", "2147483648", "-2147483649", "+-1"])
def test_to_int32_rejects_non_decimal_strings(value):
    with pytest.raises(ConversionError) as e:
        to_int32(value, 3)
    assert str(e.value) == f'replicas value "{value}" at index 3 is not a number'


@pytest.mark.parametrize("value", [2.5, 0.1, 2**31, -(2**31) - 1, 1e21, True, False, [1], {"a": 1}])
def test_to_int32_conversion_errors(value):
    with pytest.raises(ConversionError) as e:
        to_int32(value, 1)
    assert str(e.value).startswith("failed to convert object at index 1 to type int32: ")


def test_to_int32_boolean_error_names_bool():
    with pytest.raises(ConversionError) as e:
        to_int32(True, 0)
    assert "cannot unmarshal bool into Go value of type int32" in str(e.value)


def test_to_int32_fraction_error_names_number():
    with pytest.raises(ConversionError) as e:
        to_int32(2.5, 0)
    assert "cannot unmarshal number 2.5 into Go value of type int32" in str(e.value)


@pytest.mark.parametrize("value,word", [(None, "null"), (True, "bool"), (1, "number"), (1.5, "number"), ("s", "string"),
                                        ([], "array"), ({}, "object")])
def test_go_json_type(value, word):
    assert go_json_type(value) == word


# -- source normalisation (JSON round trip) ------------------------------------------------------

def test_normalize_whole_floats_become_ints():
    assert normalize({"a": [1.0, 2.5, {"b": -3.0}]}) == {"a": [1, 2.5, {"b": -3}]}
    assert type(normalize(1.0)) is int


def test_normalize_huge_ints_go_through_float64():
    out = normalize(2**64 + 1)
    assert isinstance(out, float) and out == float(2**64)


def test_normalize_returns_same_object_when_unchanged():
    obj = {"a": [1, "x", {"b": None}]}
    assert normalize(obj) is obj
