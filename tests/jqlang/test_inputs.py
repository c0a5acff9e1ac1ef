"""Input preparation (app/jqlang/inputs.py): native programs read the object itself only when
that reads exactly as the JSON text would; everything else goes through the text."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from app.jqlang import jqbatch
from app.jqlang.inputs import input_text, prepare

PROJECTION = {"spec": {"replicas": True, "template": {"spec": {"containers": True}}}, "status": True}


def workload(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w", "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]}}, **spec},
            "status": {"ready": 1}}


def test_a_plain_object_is_read_as_it_is() -> None:
    obj = workload()
    inp = prepare(obj, True, PROJECTION)
    assert inp.value is obj and not inp.exponents and inp._text is None  # no text made
    # the text is still there for libjq, built on first use, and is what it always was
    assert inp.text() == input_text(obj, True, PROJECTION)


@pytest.mark.parametrize("value, why", [
    (2.0, "an integral float prints as an integer through libjq"),
    (1e16, "an integral float in exponent form"),
    (2**60, "an integer beyond 2^53 is read through float64"),
    (datetime.datetime(2024, 1, 1), "a value JSON has no word for"),
])
def test_objects_the_text_reads_differently_take_the_text_path(value: Any, why: str) -> None:
    obj = workload(extra=value)
    inp = prepare(obj, True, PROJECTION | {"spec": {"extra": True}})
    assert inp.value is not obj, why
    assert inp.key == inp.text() == input_text(obj, True, PROJECTION | {"spec": {"extra": True}})


def test_floats_outside_the_projection_do_not_matter() -> None:
    obj = workload()
    obj["metadata"]["annotations"] = {"ratio": "1.0,2.0"}
    obj["other"] = {"weight": 3.0}  # not read by any expression
    assert prepare(obj, True, PROJECTION).value is obj


def test_keys_are_equal_exactly_when_what_expressions_read_is() -> None:
    a, b = workload(), workload()
    b["metadata"]["name"] = "other"  # outside the projection
    assert prepare(a, True, PROJECTION).key == prepare(b, True, PROJECTION).key
    b["spec"]["replicas"] = 3
    assert prepare(a, True, PROJECTION).key != prepare(b, True, PROJECTION).key


def test_without_a_projection_the_noise_is_stripped_before_native_programs_read_it() -> None:
    obj = workload()
    inp = prepare(obj, True, True)
    assert "managedFields" not in inp.value["metadata"] and "managedFields" in obj["metadata"]
    got = jqbatch.Batch([".metadata | keys"]).run(inp)[0].values
    assert got == [["name"]] == jqbatch.Batch([".metadata | keys"])._run_jq([inp.text()], None)[0][0].values


def test_a_bare_integral_float_takes_the_text_path() -> None:
    assert prepare(3.0, False).value == 3 and type(prepare(3.0, False).value) is int


@pytest.mark.parametrize("value", [0.5, -2.25, 1e-7, 2.0, 2**60])
def test_both_paths_answer_alike_for_any_number(value: Any) -> None:
    obj = {"spec": {"x": value, "xs": [value, value]}}
    exprs = [".spec.x", ".spec.x + 1", ".spec.xs | add", ".spec.x | tostring", "[.spec.xs[] | . * 2]", ".spec.x == 2"]
    b = jqbatch.Batch(exprs)
    inp = prepare(obj, False, True)
    native = [(r.values, r.error) for r in b.run(inp)]
    libjq = [(r.values, r.error) for r in b._run_jq([inp.text()], None)[0]]
    assert native == libjq and repr(native) == repr(libjq)  # 3 is not 3.0


def test_only_what_the_projection_reaches_is_vouched_for_two_levels_down() -> None:
    pod = {"metadata": {"labels": {"role": "worker"}, "managedFields": [{"weight": 1.0}], "uid": "u"},
           "spec": {"weight": 2.0}}
    inp = prepare(pod, True, {"metadata": {"labels": {"role": True}}})
    assert inp.value is pod and inp.key == b'{"metadata":{"labels":{"role":"worker"}}}'  # no float seen
    other = dict(pod, metadata=dict(pod["metadata"], uid="v"))
    assert prepare(other, True, {"metadata": {"labels": {"role": True}}}).key == inp.key
