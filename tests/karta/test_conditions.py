"""What a Karta resource's status and labels should say (app/karta/conditions.py), without a
cluster: the cases the API-server tests (tests/cluster/test_karta_status.py) do not reach."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from app.karta import conditions as kc
from app.karta.load import definition_from_document
from app.karta.registry import Registry

from ..cluster.util import BATCHTASK_DEF, definition_text

GVK = ("acme.example.com", "v1", "BatchTask")


def doc(name: str = "a") -> dict[str, Any]:
    d = yaml.safe_load(definition_text(BATCHTASK_DEF))
    d["metadata"] = {"name": name}
    return d


def defn(d: dict[str, Any]) -> Any:
    return definition_from_document(d, "cluster", kc.origin_of(d["metadata"]["name"]))


def test_root_gvk_and_labels_of_odd_specs() -> None:
    assert kc.root_gvk(doc()) == GVK
    assert kc.labels(doc()) == {"run.ai/karta-group": "acme.example.com", "run.ai/karta-version": "v1",
                                "run.ai/karta-kind": "BatchTask"}
    for spec in (None, [], {"structureDefinition": []}, {"structureDefinition": {"rootComponent": {"kind": "x"}}},
                 {"structureDefinition": {"rootComponent": {"kind": {"group": "g", "kind": "K"}}}},
                 {"structureDefinition": {"rootComponent": {"kind": {"group": 3, "version": "v1", "kind": "K"}}}}):
        assert kc.root_gvk({"spec": spec}) is None and kc.labels({"spec": spec}) == {}, spec
    pod = doc()
    pod["spec"]["structureDefinition"]["rootComponent"]["kind"] = {"version": "v1", "kind": "Pod"}
    assert kc.root_gvk(pod) == ("", "v1", "Pod")  # the core group: an empty label value
    odd = doc()
    odd["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Not A Label"
    assert kc.labels(odd) == {"run.ai/karta-group": "acme.example.com", "run.ai/karta-version": "v1"}


def test_merged_moves_the_transition_time_only_on_a_flip() -> None:
    d = doc()
    want = kc.conditions("a", d, defn(d), None, lambda g: True, Registry.of([defn(d)]), kc.claims({"a": d}))
    first = kc.merged([], want, 1, "2026-01-01T00:00:00Z")
    assert {c["lastTransitionTime"] for c in first} == {"2026-01-01T00:00:00Z"}
    assert all(c["observedGeneration"] == 1 and c["message"] for c in first)  # never an empty message
    assert kc.merged(first, want, 1, "2026-02-02T00:00:00Z") == first  # nothing changed: nothing to write
    foreign = {"type": "Audited", "status": "True", "reason": "X", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    gone = kc.conditions("a", d, defn(d), None, lambda g: False, Registry.of([defn(d)]), kc.claims({"a": d}))
    later = kc.merged([*first, foreign], gone, 2, "2026-03-03T00:00:00Z")
    times = {c["type"]: c["lastTransitionTime"] for c in later}
    assert times == {"Validated": "2026-01-01T00:00:00Z", "CRDExists": "2026-03-03T00:00:00Z",
                     "Ready": "2026-03-03T00:00:00Z", "Conflict": "2026-01-01T00:00:00Z",
                     "Audited": "2025-01-01T00:00:00Z"}
    assert later[-1] == foreign


def test_event_follows_the_worst_part() -> None:
    d = doc()
    reg = Registry.of([defn(d)])
    ok = kc.conditions("a", d, defn(d), None, lambda g: True, reg, kc.claims({"a": d}))
    assert kc.event_of([]) is None
    assert kc.event_of(ok)[:2] == ("Normal", "Validated")  # type: ignore[index]
    assert kc.event_of(kc.conditions("a", d, defn(d), None, lambda g: False, reg, {}))[:2] == (  # type: ignore[index]
        "Warning", "CRDMissing")
    bad = copy.deepcopy(d)
    del bad["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]
    assert kc.event_of(kc.conditions("a", bad, defn(bad), None, lambda g: True, reg, {})) == (
        "Warning", "ValidationFailed", "root component must have status definition")
    shadowed = kc.conditions("a", d, defn(d), None, lambda g: True, Registry.of([]), {})
    assert kc.event_of(shadowed)[:2] == ("Warning", "NotInForce")  # type: ignore[index]


def test_unreadable_karta_is_not_validated() -> None:
    d = doc()
    got = {c["type"]: c for c in kc.conditions("a", d, None, "karta:a: not a Karta definition", lambda g: True,
                                               Registry.of([]), {})}
    assert got["Validated"]["status"] == "False" and got["Validated"]["message"] == "karta:a: not a Karta definition"
    assert got["Ready"]["status"] == "False"
    nokind = {"spec": {}}
    got = {c["type"]: c for c in kc.conditions("b", nokind, defn(dict(doc("b"), spec={})), None, lambda g: True,
                                               Registry.of([]), {})}
    assert got["CRDExists"]["message"] == "the root component names no full group, version and kind"
    assert got["Conflict"]["status"] == "False"
