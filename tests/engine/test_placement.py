"""Placement in the pod view (docs/api-contract.md "What schedulers and platforms read"): nodeSelector,
tolerations, affinity, topologySpreadConstraints, runtimeClassName and resourceClaims, exactly as
written in the pod definition, per component and instance; absent when unset."""

from __future__ import annotations

import pytest
from ..karta_kit import child, karta, node, run, run_error, workload

from app.engine.interpret import PLACEMENT_FIELDS

TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
               {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute", "tolerationSeconds": 30}]
NODE_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "gpu.product", "operator": "In", "values": ["H100", "A100"]}]}]}}
POD_AFFINITY = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 10, "podAffinityTerm": {"topologyKey": "rack", "labelSelector": {"matchLabels": {"job": "w"}}}}]}
PLACEMENT = {
    "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
    "tolerations": TOLERATIONS,
    "affinity": {"nodeAffinity": NODE_AFFINITY, "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"role": "worker"}}}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}}],
    "runtimeClassName": "nvidia",
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}],
}


def _template(**spec) -> dict:
    return {"metadata": {}, "spec": {"containers": [{"name": "main", "image": "img"}], **spec}}


def _pods_doc() -> dict:
    """Two components: `a` with a template at .spec.a, `b` (two instances) with pod specs at .spec.b[]."""
    return karta(children=[
        child("a", specDefinition={"podTemplateSpecPath": ".spec.a"}, scaleDefinition={"replicasPath": ".spec.n"}),
        child("b", instanceIdPath=".spec.b[] | .id", specDefinition={"podSpecPath": ".spec.b[] | .spec"},
              podSelector={"componentInstanceSelector": {"idPath": ".metadata.labels.b"}}),
    ])


def _views(out: dict, name: str) -> list[dict]:
    return [i["pod"] for i in node(out["tree"], name)["instances"]]


def test_the_contract_names_six_placement_fields():
    assert PLACEMENT_FIELDS == ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints",
                                "runtimeClassName", "resourceClaims")


@pytest.mark.parametrize("field", sorted(PLACEMENT))
def test_each_field_of_a_template_is_in_the_pod_view_as_written(field):
    out = run(_pods_doc(), workload({"n": 2, "a": _template(**{field: PLACEMENT[field]}), "b": []}))
    [view] = _views(out, "a")
    assert view[field] == PLACEMENT[field]
    assert not set(PLACEMENT_FIELDS) - {field} & set(view)  # only what was set


def test_every_field_together_per_instance_of_pod_specs():
    spec_x = {"containers": [{"name": "c"}], **PLACEMENT}
    spec_y = {"containers": [{"name": "c"}], "tolerations": TOLERATIONS[:1]}
    out = run(_pods_doc(), workload({"a": _template(), "b": [{"id": "x", "spec": spec_x}, {"id": "y", "spec": spec_y}]}))
    x, y = _views(out, "b")
    assert {k: x[k] for k in PLACEMENT_FIELDS} == PLACEMENT
    assert y["tolerations"] == TOLERATIONS[:1]
    assert not {"nodeSelector", "affinity", "topologySpreadConstraints", "runtimeClassName", "resourceClaims"} & set(y)


def test_absent_when_unset_or_empty():
    empty = {"nodeSelector": {}, "tolerations": [], "affinity": {}, "topologySpreadConstraints": [],
             "runtimeClassName": "", "resourceClaims": None}
    out = run(_pods_doc(), workload({"a": _template(**empty), "b": [{"id": "x", "spec": {"containers": []}}]}))
    for view in _views(out, "a") + _views(out, "b"):
        assert not set(PLACEMENT_FIELDS) & set(view), view
        assert view["schedulerName"] is None and view["priorityClassName"] is None  # unchanged


def test_a_placement_field_of_the_wrong_kind_fails_the_component_like_the_reference():
    """The reference reads a pod template into a v1.PodTemplateSpec: a string where a list of
    tolerations belongs fails that component (and nothing is passed on as a toleration)."""
    fail = run_error(_pods_doc(), workload({"a": _template(tolerations="all"), "b": []}))
    [err] = fail.errors
    assert err["component"] == "a" and "PodSpec.tolerations" in err["message"]


def _fragmented_doc(**paths) -> dict:
    return karta(children=[child("m", instanceIdPath=".spec.m | keys[]",
                                 specDefinition={"fragmentedPodSpecDefinition": {
                                     "containerPath": ".spec.m[] | .engine", **paths}},
                                 podSelector={"componentInstanceSelector": {"idPath": ".metadata.labels.m"}})])


def test_fragmented_affinity_parts_meet_under_affinity_and_claims_as_written():
    claims = [{"name": "gpu", "resourceClaimName": "shared"}]
    doc = _fragmented_doc(nodeAffinityPath=".spec.m[] | .placement.node", podAffinityPath=".spec.m[] | .placement.pod",
                          resourceClaimsPath=".spec.m[] | .claims")
    out = run(doc, workload({"m": {
        "both": {"engine": {"name": "e"}, "placement": {"node": NODE_AFFINITY, "pod": POD_AFFINITY}, "claims": claims},
        "node": {"engine": {"name": "e"}, "placement": {"node": NODE_AFFINITY}},
        "none": {"engine": {"name": "e"}}}}))
    both, only_node, none = _views(out, "m")
    assert both["affinity"] == {"nodeAffinity": NODE_AFFINITY, "podAffinity": POD_AFFINITY}
    assert both["resourceClaims"] == claims
    assert only_node["affinity"] == {"nodeAffinity": NODE_AFFINITY}
    assert "resourceClaims" not in only_node
    assert not set(PLACEMENT_FIELDS) & set(none)


def test_fragmented_without_placement_paths_has_no_placement():
    out = run(_fragmented_doc(), workload({"m": {"x": {"engine": {"name": "e", "image": "i"}}}}))
    [view] = _views(out, "m")
    assert not set(PLACEMENT_FIELDS) & set(view)
    assert view["containers"] == [{"name": "e", "image": "i"}]


def test_fragmented_node_selector_and_tolerations_as_written():
    """This project's nodeSelectorPath and tolerationsPath (CRs that keep them apart, like Spark's
    driver and executor) give the pod view's nodeSelector and tolerations."""
    doc = _fragmented_doc(nodeSelectorPath=".spec.m[] | .nodeSelector", tolerationsPath=".spec.m[] | .tolerations")
    out = run(doc, workload({"m": {
        "a": {"engine": {"name": "e"}, "nodeSelector": PLACEMENT["nodeSelector"], "tolerations": TOLERATIONS},
        "b": {"engine": {"name": "e"}, "nodeSelector": {}, "tolerations": None}}}))
    a, b = _views(out, "m")
    assert a["nodeSelector"] == PLACEMENT["nodeSelector"] and a["tolerations"] == TOLERATIONS
    assert not set(PLACEMENT_FIELDS) & set(b)


@pytest.mark.parametrize("field,value,go_type", [("nodeSelector", {"zone": 1}, "map[string]string"),
                                                 ("tolerations", "all", "[]v1.Toleration")])
def test_fragmented_node_selector_or_tolerations_of_the_wrong_kind_fail_the_component(field, value, go_type):
    doc = _fragmented_doc(**{f"{field}Path": f".spec.m[] | .{field}"})
    fail = run_error(doc, workload({"m": {"a": {"engine": {"name": "e"}, field: value}}}))
    [err] = fail.errors
    assert err["component"] == "m" and go_type in err["message"]


def test_null_elements_read_as_go_reads_them():
    """A null list element is its struct's zero value, a null label or annotation value "", as the
    reference's decoder has it; the pod view stays within its schema."""
    from app.engine.interpret import interpret
    from app.karta.load import load_builtin
    from app.karta.registry import Registry
    from app.service.models import Interpretation

    tpl = {"metadata": {"labels": {"team": None}, "annotations": {"gpu-fraction": None}},
           "spec": {"resourceClaims": [None, {"name": "gpu", "resourceClaimTemplateName": "t"}],
                    "tolerations": [None], "containers": [{"name": "c", "image": "i"}]}}
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": tpl}}
    out = interpret(obj, Registry.of(load_builtin()).resolve_object(obj))
    Interpretation.model_validate(out)
    pod = out["tree"]["instances"][0]["pod"]
    assert pod["resourceClaims"] == [{}, {"name": "gpu", "resourceClaimTemplateName": "t"}]
    assert pod["tolerations"] == [{}]
    assert pod["labels"] == {"team": ""} and pod["annotations"] == {"gpu-fraction": ""}
