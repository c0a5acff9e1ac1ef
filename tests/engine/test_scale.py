"""Scale extraction (docs/karta-format.md "Scale", docs/karta-semantics.md "Instances"): int32 reading,
numeric strings, nulls, the empty scaleDefinition, min > max, Knative-style annotations, and the
"desired" reading used for pod totals."""

from __future__ import annotations

import pytest

from ..karta_kit import child, error_messages, karta, load, node, pod_template, root, run, run_error, warnings, workload

SEL = {"componentInstanceSelector": {"idPath": ".metadata.labels.inst"}}


def scale_doc(scale: dict, pod: bool = True) -> dict:
    fields = {"scaleDefinition": scale}
    if pod:
        fields["specDefinition"] = {"podTemplateSpecPath": ".spec.template"}
    return karta(children=[child("w", **fields)])


def scale_of(scale: dict, spec: dict) -> tuple:
    [i] = node(run(scale_doc(scale), workload(spec))["tree"], "w")["instances"]
    return i["replicas"], i["minReplicas"], i["maxReplicas"]


def scale_error(scale: dict, spec: dict) -> str:
    [msg] = error_messages(run_error(scale_doc(scale), workload(spec)))
    return msg


R = {"replicasPath": ".spec.r"}


@pytest.mark.parametrize("value,expected", [
    (3, 3), (3.0, 3), (0, 0), (-1, -1), ("2", 2), ("+2", 2), ("-1", -1), ("0", 0), ("10", 10),
    (None, None), (2147483647, 2147483647),
])
def test_replicas_values(value, expected):
    assert scale_of(R, {"r": value})[0] == expected


def test_missing_replicas_field_is_unset():
    assert scale_of(R, {}) == (None, None, None)


@pytest.mark.parametrize("value", ["abc", " 2", "2 ", "", "2.0", "1e3", "two"])
def test_non_numeric_string_is_an_error(value):
    msg = scale_error(R, {"r": value})
    assert f'replicas value "{value}" at index 0 is not a number' in msg


def test_abc_error_text():
    assert scale_error(R, {"r": "abc"}).endswith('replicas value "abc" at index 0 is not a number')


def test_string_error_names_index():
    doc = karta(children=[child("w", instanceIdPath=".spec.w[]", podSelector=SEL,
                                scaleDefinition={"replicasPath": ".spec.r[]"})])
    [msg] = error_messages(run_error(doc, workload({"w": ["a", "b", "c"], "r": ["1", "2", "x"]})))
    assert 'replicas value "x" at index 2 is not a number' in msg


@pytest.mark.parametrize("value", [2.5, 0.5, -1.5, True, False, 2147483648, -2147483649, 1e21, [1], {"n": 1}])
def test_conversion_errors(value):
    msg = scale_error(R, {"r": value})
    assert "failed to convert object at index 0 to type int32" in msg


@pytest.mark.parametrize("path", ["minReplicasPath", "maxReplicasPath"])
def test_min_and_max_parse_the_same_way(path):
    assert scale_of({path: ".spec.v"}, {"v": "+4"}) == ((None, 4, None) if path == "minReplicasPath" else (None, None, 4))
    assert 'replicas value "x" at index 0 is not a number' in scale_error({path: ".spec.v"}, {"v": "x"})
    assert "int32" in scale_error({path: ".spec.v"}, {"v": 2.5})


def test_min_greater_than_max_is_preserved():
    assert scale_of({"minReplicasPath": ".spec.min", "maxReplicasPath": ".spec.max"}, {"min": 5, "max": 2}) == (None, 5, 2)


def test_negative_and_zero_kept():
    assert scale_of({"replicasPath": ".spec.r", "minReplicasPath": ".spec.m", "maxReplicasPath": ".spec.x"},
                    {"r": 0, "m": -3, "x": 0}) == (0, -3, 0)


def test_literal_and_computed_expressions():
    assert scale_of({"replicasPath": '"1"'}, {})[0] == 1
    assert scale_of({"replicasPath": "(.spec.r // 1) * ((.spec.size // 1) - 1)"}, {"r": 2, "size": 4})[0] == 6
    assert scale_of({"replicasPath": 'if .spec.mode == "Suspended" then 0 else 1 end'}, {"mode": "Suspended"})[0] == 0


def test_empty_scale_definition_fails_the_zip():
    d = load(scale_doc({}))
    assert d.valid
    assert any("empty scaleDefinition" in w for w in warnings(d))
    msg = scale_error({}, {})
    assert "instance ids count (1) does not match results count (0)" in msg


def test_instance_count_is_the_maximum_of_the_three_paths():
    doc = karta(children=[child("w", instanceIdPath=".spec.w[]", podSelector=SEL,
                                scaleDefinition={"replicasPath": ".spec.r[]", "minReplicasPath": ".spec.m[]",
                                                 "maxReplicasPath": ".spec.x[]"})])
    out = run(doc, workload({"w": ["a", "b", "c"], "r": [1, 2, 3], "m": [1], "x": []}))
    assert [(i["id"], i["replicas"], i["minReplicas"], i["maxReplicas"]) for i in node(out["tree"], "w")["instances"]] == [
        ("a", 1, 1, None), ("b", 2, None, None), ("c", 3, None, None)]


def test_scale_paths_of_different_lengths_with_single_instance():
    # max count 1 matches the implicit instance; the shorter (empty) list leaves max unset
    assert scale_of({"minReplicasPath": ".spec.m", "maxReplicasPath": ".spec.x[]"}, {"m": 2, "x": []}) == (None, 2, None)


def test_scale_path_with_two_outputs_on_single_instance():
    msg = scale_error({"replicasPath": ".spec.r[]"}, {"r": [1, 2]})
    assert "instance ids count (1) does not match results count (2)" in msg


def test_component_without_scale_has_null_scale_fields():
    out = run(karta(children=[child("w", specDefinition={"podTemplateSpecPath": ".spec.t"})]), workload({"t": {}}))
    [i] = node(out["tree"], "w")["instances"]
    assert (i["replicas"], i["minReplicas"], i["maxReplicas"]) == (None, None, None)


# -- Knative-style annotations (docs/karta-semantics.md "Per-field extraction") ------------------------------------

KNATIVE_MIN = '.spec.template.metadata.annotations["autoscaling.knative.dev/min-scale"]'
KNATIVE_MAX = '.spec.template.metadata.annotations["autoscaling.knative.dev/max-scale"]'


def knative(min_path: str, max_path: str) -> dict:
    return karta(root(specDefinition={"podTemplateSpecPath": ".spec.template"},
                      scaleDefinition={"minReplicasPath": min_path, "maxReplicasPath": max_path}))


def knative_obj(annotations: dict) -> dict:
    return workload({"template": {"metadata": {"annotations": annotations}, "spec": {"containers": [{"name": "c"}]}}})


def test_knative_min_and_max_scale_annotations():
    out = run(knative(KNATIVE_MIN, KNATIVE_MAX), knative_obj({"autoscaling.knative.dev/min-scale": "2",
                                                              "autoscaling.knative.dev/max-scale": "3"}))
    [i] = out["tree"]["instances"]
    assert (i["minReplicas"], i["maxReplicas"]) == (2, 3)


def test_knative_missing_annotation_with_fallback():
    out = run(knative(KNATIVE_MIN + " // 1", KNATIVE_MAX), knative_obj({}))
    [i] = out["tree"]["instances"]
    assert (i["replicas"], i["minReplicas"], i["maxReplicas"]) == (None, 1, None)


def test_knative_tonumber_optional_yields_no_output_when_absent():
    out = run(knative(KNATIVE_MIN + " // 1", KNATIVE_MAX + " | tonumber?"), knative_obj({}))
    [i] = out["tree"]["instances"]
    assert (i["minReplicas"], i["maxReplicas"]) == (1, None)


def test_knative_bad_annotation():
    e = run_error(knative(KNATIVE_MIN, KNATIVE_MAX), knative_obj({"autoscaling.knative.dev/min-scale": "abc"}))
    assert any('replicas value "abc"' in m for m in error_messages(e))


def test_knative_desired_uses_min_when_replicas_unset():
    out = run(knative(KNATIVE_MIN, KNATIVE_MAX), knative_obj({"autoscaling.knative.dev/min-scale": "2",
                                                              "autoscaling.knative.dev/max-scale": "3"}))
    assert out["totals"]["pods"] == 2


# -- the "desired" reading used for pod totals (docs/karta-semantics.md "Three readings of a scale") ----------------

def desired(scale: dict | None, spec: dict) -> int:
    fields = {"specDefinition": {"podTemplateSpecPath": ".spec.template"}}
    if scale is not None:
        fields["scaleDefinition"] = scale
    out = run(karta(children=[child("w", **fields)]), workload(dict(spec, template=pod_template(gpus=1))))
    w = node(out["tree"], "w")
    assert w["instances"][0]["totals"]["pods"] == w["totals"]["pods"] == out["totals"]["pods"]
    assert out["totals"]["gpus"] == out["totals"]["pods"]
    return out["totals"]["pods"]


def test_desired_without_scale_is_one():
    assert desired(None, {}) == 1


def test_desired_is_replicas():
    assert desired({"replicasPath": ".spec.r"}, {"r": 4}) == 4


def test_desired_keeps_replicas_zero():
    assert desired({"replicasPath": ".spec.r", "minReplicasPath": ".spec.m"}, {"r": 0, "m": 3}) == 0


def test_desired_uses_min_when_replicas_unset():
    assert desired({"replicasPath": ".spec.r", "minReplicasPath": ".spec.m"}, {"m": 3}) == 3


def test_desired_ignores_max():
    assert desired({"maxReplicasPath": ".spec.x"}, {"x": 9}) == 1


def test_desired_defaults_to_one_when_all_unset():
    assert desired({"replicasPath": ".spec.r", "minReplicasPath": ".spec.m"}, {}) == 1


def test_desired_replicas_before_min():
    assert desired({"replicasPath": ".spec.r", "minReplicasPath": ".spec.m"}, {"r": 2, "m": 5}) == 2
