"""The interpretation contract as a whole (docs/api-contract.md "One interpretation" and "Errors")."""

from __future__ import annotations

import pytest

from ..karta_kit import child, karta, load, pod_template, root, run, status_def, workload
from app.engine.interpret import InterpretationError, interpret


def test_top_level_keys():
    out = run(karta())
    assert {"workload", "definition", "status", "tree", "totals", "gang", "warnings"} <= set(out)
    assert out["warnings"] == []


def test_workload_reference():
    out = run(karta(), workload(name="llm", uid="abc"))
    assert out["workload"] == {"apiVersion": "acme.example.com/v1", "kind": "Thing", "namespace": "ns", "name": "llm",
                               "uid": "abc"}


def test_definition_reference():
    d = load(karta(name="my-def"))
    out = interpret(workload(), d)
    assert out["definition"] == {"name": "my-def", "source": "inline", "digest": d.digest}


def test_tree_node_shape():
    out = run(karta(children=[child("w", specDefinition={"podTemplateSpecPath": ".spec.t"},
                                    scaleDefinition={"replicasPath": "2"})]),
              workload({"t": pod_template(gpus=1)}))
    w = out["tree"]["children"][0]
    assert {"name", "kind", "podBearing", "instances", "children", "totals"} <= set(w)
    inst = w["instances"][0]
    assert {"id", "replicas", "minReplicas", "maxReplicas", "pod", "totals"} <= set(inst)
    assert inst["id"] is None


def test_invalid_definition_lists_every_finding_with_reference_wording():
    d = load(karta(root(statusDefinition=None), children=[child("a", owner="ghost")]))
    with pytest.raises(InterpretationError) as e:
        interpret(workload(), d)
    msgs = [x["message"] for x in e.value.errors]
    assert "root component must have status definition" in msgs
    assert "child component 'a' has owner ref to non-existing component 'ghost'" in msgs
    assert all("path" in x for x in e.value.errors)


def test_jq_failure_names_expression_and_field():
    doc = karta(children=[child("w", scaleDefinition={"replicasPath": ".spec.r[]"})])
    out = run(doc, workload({}))  # the status still computes: a partial result, not a failure
    assert out["complete"] is False and out["status"]["phase"] == "Undefined"
    [err] = out["errors"]
    assert (err["part"], err["component"]) == ("component", "w")
    assert err["expression"] == ".spec.r[]"
    assert err["path"] == "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath"
    assert "cannot iterate over: null" in err["message"]


def test_status_error_names_matcher_field():
    doc = karta(root(statusDefinition=status_def(
        {"failed": [{"byPhase": "x"}, {"byExpression": {"expression": 'error("bad")', "expectedResult": "true"}}]})))
    out = run(doc, workload({}))  # the tree still computes
    assert out["complete"] is False and out["status"] is None and out["totals"] is not None
    [err] = out["errors"]
    assert err["part"] == "status" and "component" not in err
    assert err["path"] == ("spec.structureDefinition.rootComponent.statusDefinition.statusMappings.failed[1]"
                           ".byExpression.expression")
    assert err["expression"] == 'error("bad")'


def test_interpretation_is_repeatable_and_does_not_mutate_input():
    import copy

    d = load(karta(children=[child("w", specDefinition={"podTemplateSpecPath": ".spec.t"})]))
    obj = workload({"t": pod_template(gpus=1)})
    before = copy.deepcopy(obj)
    a, b = interpret(obj, d), interpret(obj, d)
    assert a == b
    assert obj == before


def test_managed_fields_do_not_change_the_result():
    d = load(karta(children=[child("w", specDefinition={"podTemplateSpecPath": ".spec.t"})]))
    plain = workload({"t": pod_template(gpus=1)})
    noisy = workload({"t": pod_template(gpus=1)}, managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}])
    a, b = interpret(plain, d), interpret(noisy, d)
    assert a["totals"] == b["totals"] and a["tree"] == b["tree"]


def test_expression_reading_managed_fields_still_sees_them():
    doc = karta(root(statusDefinition=status_def(
        {"running": [{"byExpression": {"expression": ".metadata.managedFields | length", "expectedResult": "1"}}]})))
    out = run(doc, workload({}, managedFields=[{"manager": "kubectl"}]))
    assert out["status"]["matched"] == ["Running"]
