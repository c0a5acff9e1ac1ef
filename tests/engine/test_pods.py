"""Pods: component and instance inference (docs/karta-semantics.md "Gang hints", docs/karta-format.md
"Pod selectors") and live attribution with readiness (docs/karta-semantics.md "Live pods")."""

from __future__ import annotations

import pytest

from ..karta_kit import child, instance, karta, node, pod, pod_template, root, run, workload
from app.engine.compiled import type_selector_expression
from app.jqlang.jqbatch import Result
from app.engine.pods import PodError, PodInput, matches_type
from app.karta.model import ComponentTypeSelector

TPL = {"podTemplateSpecPath": ".spec.template"}
INST_SEL = {"componentInstanceSelector": {"idPath": ".metadata.labels.inst"}}
V2 = {"podGroup": {"name": "pg"}}


def sel(key_path: str | None = None, value: str | None = None, match_labels: dict | None = None) -> dict:
    s = {}
    if key_path is not None:
        s["keyPath"] = key_path
    if value is not None:
        s["value"] = value
    if match_labels is not None:
        s["matchLabels"] = match_labels
    return {"componentTypeSelector": s}


def leaf(name: str, selector: dict | None = None, owner: str = "root", **fields) -> dict:
    c = child(name, owner=owner, specDefinition=fields.pop("specDefinition", TPL), **fields)
    if selector is not None:
        c["podSelector"] = selector
    return c


def components(doc: dict, pods: list[dict], spec: dict | None = None) -> dict[str, str]:
    """pod name -> inferred component, or the error text."""
    rows = run(doc, workload(spec or {"template": {}}), pods)["gang"]["pods"]
    return {r["pod"]: r.get("error", r.get("component")) for r in rows}


def component_of(doc: dict, p: dict) -> str:
    return components(doc, [p])[p["metadata"]["name"]]


# -- InferPodComponent ------------------------------------------------------------------------------

def test_single_leaf_claims_every_pod_without_consulting_selectors():
    doc = karta(children=[leaf("worker", sel(".metadata.labels.role", "worker")), child("group")], gang=V2)
    assert components(doc, [pod("a", {"role": "other"}), pod("b")]) == {"a": "worker", "b": "worker"}


def test_first_matching_leaf_root_first():
    doc = karta(root(specDefinition=TPL, podSelector=sel(".metadata.labels.app")),
                children=[leaf("child", sel(".metadata.labels.app"))], gang=V2)
    assert component_of(doc, pod("p", {"app": "x"})) == "root"


def test_first_matching_leaf_in_definition_order():
    doc = karta(children=[leaf("b", sel(".metadata.labels.app")), leaf("a", sel(".metadata.labels.app"))], gang=V2)
    assert component_of(doc, pod("p", {"app": "x"})) == "b"


def test_leaves_without_type_selector_are_skipped():
    doc = karta(children=[leaf("nosel"), leaf("withsel", sel(".metadata.labels.app"))], gang=V2)
    assert component_of(doc, pod("p", {"app": "x"})) == "withsel"


def test_non_leaf_selectors_are_not_consulted():
    doc = karta(children=[child("group", podSelector=sel(".metadata.labels.app")),
                          leaf("a", sel(".metadata.labels.a")), leaf("b", sel(".metadata.labels.b"))], gang=V2)
    assert component_of(doc, pod("p", {"app": "x"})) == "no component found for pod p"


def test_no_component_found():
    doc = karta(children=[leaf("a", sel(".metadata.labels.role", "a")), leaf("b", sel(".metadata.labels.role", "b"))],
                gang=V2)
    assert component_of(doc, pod("p1", {"role": "c"})) == "no component found for pod p1"


@pytest.mark.parametrize("labels,expected", [
    ({"x": ""}, "a"),
    ({"x": "v"}, "a"),
    ({}, "no component found for pod p"),
])
def test_existence_check_on_label(labels, expected):
    doc = karta(children=[leaf("a", sel(".metadata.labels.x")), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", labels)) == expected


def test_false_counts_as_existing():
    doc = karta(children=[leaf("a", sel(".spec.hostNetwork")), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    p = pod("p")
    p["spec"]["hostNetwork"] = False
    assert component_of(doc, p) == "a"


def test_existence_any_non_null_output():
    doc = karta(children=[leaf("a", sel(".spec.containers[].ports")), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    p = pod("p", spec={"containers": [{"name": "x"}, {"name": "y", "ports": []}]})
    assert component_of(doc, p) == "a"


def test_value_equality_with_label():
    doc = karta(children=[leaf("a", sel(".metadata.labels.rank", "5")), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", {"rank": "5"})) == "a"
    assert component_of(doc, pod("q", {"rank": "6"})) == "no component found for pod q"


def test_numeric_field_never_equals_string_value():
    doc = karta(children=[leaf("a", sel(".spec.priority", "5")), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    p = pod("p")
    p["spec"]["priority"] = 5
    assert component_of(doc, p) == "no component found for pod p"


def test_value_equality_any_output_true():
    doc = karta(children=[leaf("a", sel(".spec.containers[].name", "sidecar")), leaf("b", sel(".metadata.labels.never"))],
                gang=V2)
    p = pod("p", spec={"containers": [{"name": "main"}, {"name": "sidecar"}]})
    assert component_of(doc, p) == "a"


def test_value_with_quotes_is_json_quoted():
    doc = karta(children=[leaf("a", sel(".metadata.labels.x", 'a"b')), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", {"x": 'a"b'})) == "a"


def test_match_labels_every_entry():
    ml = {"app.kubernetes.io/name": "milvus", "app.kubernetes.io/component": "proxy"}
    doc = karta(children=[leaf("proxy", sel(match_labels=ml)), leaf("other", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", dict(ml, extra="1"))) == "proxy"
    assert component_of(doc, pod("q", {"app.kubernetes.io/name": "milvus"})) == "no component found for pod q"
    assert component_of(doc, pod("r", dict(ml, **{"app.kubernetes.io/component": "pulsar"}))) == \
        "no component found for pod r"


def test_match_labels_empty_value_must_be_present():
    doc = karta(children=[leaf("a", sel(match_labels={"flag": ""})), leaf("b", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", {"flag": ""})) == "a"
    assert component_of(doc, pod("q", {})) == "no component found for pod q"


def test_match_labels_and_key_path_both_required():
    doc = karta(children=[leaf("a", sel(".metadata.labels.role", "w", {"app": "x"})),
                          leaf("b", sel(".metadata.labels.never"))], gang=V2)
    assert component_of(doc, pod("p", {"app": "x", "role": "w"})) == "a"
    assert component_of(doc, pod("q", {"app": "x", "role": "v"})) == "no component found for pod q"
    assert component_of(doc, pod("r", {"app": "y", "role": "w"})) == "no component found for pod r"


def test_selector_without_any_condition_never_matches():
    p = PodInput(pod("p", {"a": "b"}), {})
    assert matches_type(ComponentTypeSelector(), p) is False
    assert matches_type(None, p) is False
    assert matches_type(ComponentTypeSelector(match_labels={}), p) is False


def outputs_match(sel: ComponentTypeSelector, values: list | None, error: str | None = None) -> bool:
    text = type_selector_expression(sel.key_path, sel.value)
    return matches_type(sel, PodInput(pod("p"), {text: Result(values, error)}))


def test_key_path_alone_matches_any_non_null_output():
    sel = ComponentTypeSelector(key_path=".metadata.labels.role")
    assert outputs_match(sel, [None, 0]) is True
    assert outputs_match(sel, [False]) is True
    assert outputs_match(sel, [None]) is False
    assert outputs_match(sel, []) is False
    assert outputs_match(sel, None) is False


def test_key_path_with_value_matches_only_boolean_true():
    sel = ComponentTypeSelector(key_path=".metadata.labels.role", value="worker")
    assert outputs_match(sel, [False, True]) is True
    assert outputs_match(sel, [1]) is False
    assert outputs_match(sel, [1.0, "true"]) is False
    with pytest.raises(PodError, match="boom"):
        outputs_match(sel, None, "boom")


def test_type_selector_text_is_built_once_per_selector():
    """Its text (a JSON dump of the value) is needed for every pod: it is cached by (keyPath, value)."""
    sel = ComponentTypeSelector(key_path='.metadata.labels["x"]', value='a "quoted" value')
    text = type_selector_expression(sel.key_path, sel.value)
    before = type_selector_expression.cache_info()
    for matched in (True, False, True):
        assert outputs_match(sel, [matched]) is matched
    after = type_selector_expression.cache_info()
    assert after.hits - before.hits >= 2 and after.misses - before.misses <= 1
    assert type_selector_expression(sel.key_path, sel.value) == text


def test_pod_input_name_is_read_once_as_text():
    assert PodInput({"metadata": {"name": 7}}, {}).name == "7"
    assert PodInput({"metadata": None}, {}).name == ""
    p = PodInput(pod("p"), {})
    p.obj["metadata"]["name"] = "renamed"
    assert p.name == "p"  # the name the pod came with keys its rows and messages


# -- InferPodComponentInstance ------------------------------------------------------------------------

def inst_doc(id_path: str = ".metadata.labels.inst") -> dict:
    return karta(children=[leaf("stage", sel(".metadata.labels.role", "stage"), instanceIdPath=".spec.stages[]",
                                specDefinition={"podTemplateSpecPath": ".spec.stages[] | null"}),
                           leaf("other", sel(".metadata.labels.role", "other"))],
                 gang={"podGroups": [{"name": "g", "members": [{"componentName": "stage"}, {"componentName": "other"}]}]})


def _with_instance_selector(doc: dict, id_path: str) -> dict:
    c = doc["spec"]["structureDefinition"]["childComponents"][0]
    c["podSelector"] = {**sel(".metadata.labels.role", "stage"), "componentInstanceSelector": {"idPath": id_path}}
    return doc


def inst_rows(pods: list[dict], id_path: str = ".metadata.labels.inst", stages=("a", "b")) -> dict[str, dict]:
    doc = _with_instance_selector(inst_doc(), id_path)
    out = run(doc, workload({"stages": list(stages), "template": {}}), pods)
    return {r["pod"]: r for r in out["gang"]["pods"]}


def test_pod_maps_to_its_instance():
    rows = inst_rows([pod("p", {"role": "stage", "inst": "b"})])
    assert rows["p"]["instance"] == "b"


def test_unknown_instance_id():
    rows = inst_rows([pod("p", {"role": "stage", "inst": "x"})])
    assert rows["p"]["error"] == 'could not match instance id "x". existing instance ids [a b]'


def test_instance_id_path_with_two_outputs():
    rows = inst_rows([pod("p", {"role": "stage", "inst": "a"})], id_path=".metadata.labels.inst, .metadata.labels.role")
    assert rows["p"]["error"] == "expected single query result, got 2"


def test_instance_id_path_with_no_output():
    rows = inst_rows([pod("p", {"role": "stage"})], id_path=".metadata.labels.inst // empty")
    assert rows["p"]["error"] == "expected single query result, got 0"


@pytest.mark.parametrize("labels", [{"role": "stage"}, {"role": "stage", "inst": ""}])
def test_instance_id_empty(labels):
    rows = inst_rows([pod("p", labels)])
    assert rows["p"]["error"].startswith("query result is empty")


def test_instance_id_is_go_v_formatted():
    p = pod("p", {"role": "stage"})
    p["spec"]["rank"] = 3.0
    rows = inst_rows([p], id_path=".spec.rank", stages=("3", "4"))
    assert rows["p"]["instance"] == "3"


def test_instance_id_must_match_exactly():
    rows = inst_rows([pod("p", {"role": "stage", "inst": "A"})])
    assert rows["p"]["error"] == 'could not match instance id "A". existing instance ids [a b]'


def test_component_without_instance_ids_has_no_instance():
    rows = inst_rows([pod("o", {"role": "other"})])
    assert rows["o"]["component"] == "other"
    assert rows["o"]["instance"] is None


def test_zero_instance_ids_means_no_instance():
    doc = _with_instance_selector(inst_doc(), ".metadata.labels.inst")
    doc["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = "(.spec.stages // [])[]"
    doc["spec"]["structureDefinition"]["childComponents"][0]["specDefinition"] = {
        "podTemplateSpecPath": "(.spec.stages // [])[] | null"}
    out = run(doc, workload({"template": {}}), [pod("p", {"role": "stage", "inst": "zzz"})])
    [row] = out["gang"]["pods"]
    assert row["instance"] is None and "error" not in row


# -- attribution ---------------------------------------------------------------------------------------

def ready_pod(name: str, labels: dict | None = None, node_name: str | None = "n1", phase: str = "Running") -> dict:
    p = pod(name, labels, status={"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]})
    if node_name:
        p["spec"]["nodeName"] = node_name
    return p


def live(doc: dict, pods: list[dict], spec: dict | None = None) -> dict:
    return run(doc, workload(spec or {"template": pod_template(gpus=1), "replicas": 3}), pods)["live"]


def deployment() -> dict:
    return karta(root(specDefinition=TPL, scaleDefinition={"replicasPath": ".spec.replicas"}))


def test_sole_owner_claims_all_pods_without_selector():
    lv = live(deployment(), [ready_pod("b"), ready_pod("a")])
    assert [p["name"] for p in lv["pods"]] == ["a", "b"]
    assert (lv["current"], lv["ready"], lv["desired"]) == (2, 2, 3)
    assert lv["unplaced"] == []


def test_not_sole_owner_selectorless_component_claims_nothing():
    doc = karta(root(specDefinition=TPL), children=[child("cfg", specDefinition={})])
    lv = live(doc, [ready_pod("a")])
    assert lv["pods"] == []
    assert lv["current"] == 0
    assert lv["unplaced"] == ["a"]


def test_type_selector_claims_matching_pods_only():
    doc = karta(children=[leaf("worker", sel(".metadata.labels.role", "worker")),
                          leaf("master", sel(".metadata.labels.role", "master"))])
    lv = live(doc, [ready_pod("w0", {"role": "worker"}), ready_pod("m0", {"role": "master"}), ready_pod("x", {})])
    assert {p["name"]: p["component"] for p in lv["pods"]} == {"w0": "worker", "m0": "master"}
    assert lv["unplaced"] == ["x"]
    assert lv["current"] == 2


def test_current_counts_every_phase_ready_only_ready_condition():
    pods = [ready_pod("a"), pod("b", status={"phase": "Pending"}), pod("c", status={"phase": "Succeeded"}),
            pod("d", status={"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]})]
    lv = live(deployment(), pods)
    assert lv["current"] == 4
    assert lv["ready"] == 1
    assert {p["name"]: p["ready"] for p in lv["pods"]} == {"a": True, "b": False, "c": False, "d": False}


def test_pod_row_shape():
    lv = live(deployment(), [ready_pod("a", node_name="node-7")])
    [row] = lv["pods"]
    assert row == {"name": "a", "component": "root", "instance": None, "phase": "Running", "ready": True,
                   "node": "node-7", "reason": None}


def test_unscheduled_pod_has_null_node():
    lv = live(deployment(), [pod("a", status={"phase": "Pending"})])
    assert lv["pods"][0]["node"] is None


def test_reason_pod_scheduled_false_first():
    status = {"phase": "Pending", "reason": "Evicted",
              "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                             {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    assert live(deployment(), [pod("a", status=status)])["pods"][0]["reason"] == "Unschedulable"


def test_reason_status_reason_second():
    status = {"phase": "Failed", "reason": "Evicted",
              "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                             {"type": "PodScheduled", "status": "True"}]}
    assert live(deployment(), [pod("a", status=status)])["pods"][0]["reason"] == "Evicted"


def test_reason_ready_false_last():
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}
    assert live(deployment(), [pod("a", status=status)])["pods"][0]["reason"] == "ContainersNotReady"


def test_no_reason_when_ready():
    p = ready_pod("a")
    p["status"]["reason"] = "Whatever"
    assert live(deployment(), [p])["pods"][0]["reason"] is None


def test_no_reason_at_all():
    assert live(deployment(), [pod("a", status={"phase": "Pending"})])["pods"][0]["reason"] is None


def test_instance_live_counts():
    lv_out = run(deployment(), workload({"template": {}, "replicas": 2}), [ready_pod("a"), pod("b")])
    assert lv_out["tree"]["instances"][0]["live"]["current"] == 2
    assert lv_out["tree"]["instances"][0]["live"]["ready"] == 1


def multi_instance_doc(with_instance_selector: bool = True) -> dict:
    ps = sel(".metadata.labels.role", "stage")
    if with_instance_selector:
        ps.update(INST_SEL)
    return karta(children=[child("stage", instanceIdPath=".spec.stages[].name", podSelector=ps,
                                 specDefinition={"podTemplateSpecPath": ".spec.stages[].template"},
                                 scaleDefinition={"replicasPath": ".spec.stages[].n"}),
                           leaf("coord", sel(".metadata.labels.role", "coord"))])


STAGES = {"template": {}, "stages": [{"name": "prep", "n": 1, "template": {}}, {"name": "train", "n": 2, "template": {}}]}


def test_multi_instance_pods_narrowed_by_instance_id():
    out = run(multi_instance_doc(), workload(STAGES),
              [ready_pod("t0", {"role": "stage", "inst": "train"}), ready_pod("t1", {"role": "stage", "inst": "train"}),
               pod("p0", {"role": "stage", "inst": "prep"}), ready_pod("c0", {"role": "coord"})])
    stage = node(out["tree"], "stage")
    assert instance(stage, "train")["live"]["current"] == 2
    assert instance(stage, "train")["live"]["ready"] == 2
    assert instance(stage, "prep")["live"]["current"] == 1
    assert instance(stage, "prep")["live"]["ready"] == 0
    rows = {p["name"]: (p["component"], p["instance"]) for p in out["live"]["pods"]}
    assert rows == {"t0": ("stage", "train"), "t1": ("stage", "train"), "p0": ("stage", "prep"), "c0": ("coord", None)}
    assert out["live"]["current"] == 4 and out["live"]["ready"] == 3


def test_pod_of_vanished_instance_is_not_placed():
    out = run(multi_instance_doc(), workload(STAGES), [ready_pod("old", {"role": "stage", "inst": "gone"})])
    assert out["live"]["pods"] == []
    assert out["live"]["unplaced"] == ["old"]


def test_claimed_pod_without_instance_label_is_reported():
    out = run(multi_instance_doc(), workload(STAGES), [ready_pod("x", {"role": "stage"})])
    assert out["live"]["unplaced"] == ["x"]
    assert any("x" in w and "query result is empty" in w for w in out["warnings"])


def test_pods_sorted_by_name_and_desired_from_totals():
    out = run(multi_instance_doc(), workload(STAGES),
              [ready_pod("z", {"role": "coord"}), ready_pod("a", {"role": "stage", "inst": "prep"})])
    assert [p["name"] for p in out["live"]["pods"]] == ["a", "z"]
    assert out["live"]["desired"] == out["totals"]["pods"] == 4


def test_live_absent_without_pods():
    assert "live" not in run(deployment(), workload({"template": {}, "replicas": 1}))


def test_empty_pod_list_gives_zero_live():
    lv = live(deployment(), [])
    assert (lv["current"], lv["ready"], lv["pods"]) == (0, 0, [])


def test_reason_container_waiting_is_not_in_the_reference_order():
    # docs/karta-semantics.md "Live pods": PodScheduled=False reason, else status.reason, else the Ready=False reason.
    status = {"phase": "Running",
              "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
              "containerStatuses": [{"name": "c", "ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    assert live(deployment(), [pod("a", status=status)])["pods"][0]["reason"] == "ContainersNotReady"


def test_instance_nodes_sorted_and_distinct():
    out = run(deployment(), workload({"template": {}, "replicas": 3}),
              [ready_pod("a", node_name="n2"), ready_pod("b", node_name="n1"), ready_pod("c", node_name="n2"),
               pod("d", status={"phase": "Pending"})])
    assert out["tree"]["instances"][0]["live"]["nodes"] == ["n1", "n2"]


def test_single_id_component_still_filters_by_instance():
    # upstream test: a leftover PrefillWorker pod does not land on the surviving Frontend
    doc = karta(children=[child("service", instanceIdPath=".spec.services | keys[]",
                                podSelector={**sel(".metadata.labels.svc"), **INST_SEL},
                                specDefinition={"podTemplateSpecPath": ".spec.services[] | .template"})])
    spec = {"services": {"Frontend": {"template": {}}}}
    out = run(doc, workload(spec), [ready_pod("fe-0", {"svc": "x", "inst": "Frontend"}),
                                    ready_pod("pw-0", {"svc": "x", "inst": "PrefillWorker"})])
    assert [(p["name"], p["instance"]) for p in out["live"]["pods"]] == [("fe-0", "Frontend")]
    assert out["live"]["unplaced"] == ["pw-0"]
