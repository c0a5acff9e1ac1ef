"""What the engine refuses in a pod before reading it (interpret.py `pod_problems`): the types
the API server guarantees for the fields the engine reads, and their order in the answer."""

from __future__ import annotations

from ..karta_kit import karta, pod, root, run_fatal
from app.engine.interpret import pod_problems


def paths(p: object) -> list[str]:
    return [e["path"] for e in pod_problems(p)]


def test_a_pod_as_the_api_server_gives_it_has_no_problems():
    p = pod("p", {"app": "x"}, spec={"containers": [{"name": "main"}], "nodeName": "n1"},
            status={"phase": "Running", "reason": "r", "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "main"}], "initContainerStatuses": []})
    assert pod_problems(p) == []
    assert pod_problems({"metadata": {"name": "p", "labels": None}, "spec": None, "status": None,
                         "apiVersion": "v1", "kind": "Pod"}) == []


def test_envelope_problems_come_alone():
    assert pod_problems(3) == [{"path": "", "message": "the object must be a JSON object"}]
    assert paths({"metadata": "x", "status": 1}) == ["apiVersion", "kind", "metadata"]


def test_field_types_are_reported_in_field_order():
    p = pod("p", spec={"nodeName": 1}, status={"phase": 2, "reason": [], "conditions": {}, "containerStatuses": "x",
                                               "initContainerStatuses": True})
    p["metadata"]["labels"] = ["a"]
    assert pod_problems(p) == [{"path": f, "message": f"{f} has the wrong type"} for f in (
        "metadata.labels", "spec.nodeName", "status.phase", "status.reason", "status.conditions",
        "status.containerStatuses", "status.initContainerStatuses")]
    assert paths(dict(pod("p"), spec=[], status="Running")) == ["spec", "status"]


def test_a_spec_or_status_of_the_wrong_type_hides_its_fields():
    assert paths(dict(pod("p"), spec=["nodeName"], status=True)) == ["spec", "status"]


def test_items_are_checked_only_when_the_types_are_right():
    p = pod("p", status={"phase": 1, "conditions": [1]}, labels={"a": 1})
    assert paths(p) == ["status.phase"]


def test_non_object_items_are_named_by_list_and_index():
    p = pod("p", status={"initContainerStatuses": [{}, 2], "conditions": [1, {"type": "Ready"}, "x"],
                         "containerStatuses": [None]})
    assert pod_problems(p) == [{"path": f, "message": f"{f} must be an object"} for f in (
        "status.conditions[0]", "status.conditions[2]", "status.containerStatuses[0]",
        "status.initContainerStatuses[1]")]


def test_label_values_must_be_strings_after_the_items():
    p = pod("p", {"a": "x", "b": None}, status={"conditions": [0]})
    assert pod_problems(p) == [
        {"path": "status.conditions[0]", "message": "status.conditions[0] must be an object"},
        {"path": "metadata.labels", "message": "label values must be strings"}]
    assert pod_problems(pod("p", {})) == []


def test_interpret_names_each_pod_by_its_index():
    e = run_fatal(karta(root()), pods=[pod("ok"), pod("bad", status={"phase": 5}), 7])
    assert [x["path"] for x in e.errors] == ["pods[1].status.phase", "pods[2]"]
