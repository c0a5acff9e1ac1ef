"""Suspend / resume actions (docs/karta-format.md "Suspend and resume"): `(path) = decode_json(value)` in order against
the root object, through the write-path resolver; refusals name the action."""

from __future__ import annotations

import copy

import pytest
from ..karta_kit import karta, load, root

from app.engine.suspend import (
    ActionError,
    NoSuspendDefinition,
    apply_actions,
    suspend_definition,
)

OBJ = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "resourceVersion": "7"},
       "spec": {"groups": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]}}


def definition(suspend: list[dict], resume: list[dict] | None = None):  # type: ignore[no-untyped-def]
    return load(karta(root(suspendDefinition={"suspendActions": suspend,
                                              "resumeActions": resume or [{"path": ".spec.x", "value": "1"}]})))


def test_actions_apply_in_order_and_create_parents() -> None:
    d = definition([{"path": ".spec.mode", "value": '"Running"'},
                    {"path": ".spec.groups[].suspend", "value": "true"},
                    {"path": ".spec.mode", "value": '"Suspended"'},
                    {"path": ".spec.extra.deep", "value": "null"}])
    before = copy.deepcopy(OBJ)
    out = apply_actions(d, OBJ, "suspend")
    assert OBJ == before  # the input is never modified
    assert out["spec"]["mode"] == "Suspended"
    assert [g["suspend"] for g in out["spec"]["groups"]] == [True, True]
    assert out["spec"]["extra"] == {"deep": None}
    assert apply_actions(d, OBJ, "resume")["spec"]["x"] == 1


@pytest.mark.parametrize("action,field,words", [
    ({"path": ".spec.paused", "value": "paused"}, "suspendActions[1]", "failed to decode value"),
    ({"path": "(.spec.replicas // 1)", "value": "0"}, "suspendActions[1]", "does not address writable locations"),
    ({"path": ".metadata.name", "value": '"x"'}, "suspendActions[1]", "may not write /metadata/name"),
    ({"path": ".", "value": "{}"}, "suspendActions[1]", "may not write the whole object"),
])
def test_a_bad_action_is_named(action: dict, field: str, words: str) -> None:
    d = definition([{"path": ".spec.ok", "value": "true"}, action])
    with pytest.raises(ActionError) as e:
        apply_actions(d, OBJ, "suspend")
    assert e.value.field == field and words in str(e.value), str(e.value)


def test_no_suspend_definition() -> None:
    d = load(karta())
    assert suspend_definition(d) is None
    with pytest.raises(NoSuspendDefinition, match="the definition of Thing has no suspendDefinition"):
        apply_actions(d, OBJ, "suspend")
