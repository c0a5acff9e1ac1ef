"""Small builders for inline Karta definitions and workload objects used by the engine tests.

Everything goes through the public entry points: `definition_from_document(doc, "inline",
"test")` to load and check a definition, `interpret(obj, definition, pods)` to apply it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.engine.interpret import InterpretationError, interpret
from app.engine.options import DEFAULT_OPTIONS, EngineOptions
from app.karta.load import Definition, definition_from_document

GROUP, VERSION, KIND = "acme.example.com", "v1", "Thing"
UID = "u1"


def status_def(mappings: dict | None = None, phase: str | None = None, conditions: dict | str | None = None) -> dict:
    sd: dict[str, Any] = {"statusMappings": mappings if mappings is not None else {}}
    if phase is not None:
        sd["phaseDefinition"] = {"path": phase}
    if conditions is not None:
        if isinstance(conditions, str):
            conditions = {"path": conditions, "typeFieldName": "type", "statusFieldName": "status",
                          "messageFieldName": "message", "reasonFieldName": "reason"}
        sd["conditionsDefinition"] = conditions
    return sd


def root(name: str = "root", **fields: Any) -> dict:
    """A valid root component; `fields` (camelCase keys) override or add. `None` removes a key."""
    c: dict[str, Any] = {"name": name, "kind": {"group": GROUP, "version": VERSION, "kind": KIND},
                         "statusDefinition": status_def()}
    for k, v in fields.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return c


def child(name: str, owner: str | None = "root", **fields: Any) -> dict:
    c: dict[str, Any] = {"name": name}
    if owner is not None:
        c["ownerRef"] = owner
    c.update(fields)
    return c


def karta(root_component: dict | None = None, children: list[dict] | None = None, gang: dict | None = None,
          name: str = "test-karta", **extra_structure: Any) -> dict:
    sd: dict[str, Any] = {"rootComponent": root_component if root_component is not None else root()}
    if children is not None:
        sd["childComponents"] = children
    sd.update(extra_structure)
    spec: dict[str, Any] = {"structureDefinition": sd}
    if gang is not None:
        spec["optimizationInstructions"] = {"gangScheduling": gang}
    return {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": name}, "spec": spec}


def load(doc: dict) -> Definition:
    return definition_from_document(copy.deepcopy(doc), "inline", "test")


def errors(doc_or_def: dict | Definition) -> list[str]:
    d = doc_or_def if isinstance(doc_or_def, Definition) else load(doc_or_def)
    return [f.message for f in d.findings if f.level == "error"]


def warnings(doc_or_def: dict | Definition) -> list[str]:
    d = doc_or_def if isinstance(doc_or_def, Definition) else load(doc_or_def)
    return [f.message for f in d.findings if f.level == "warning"]


def workload(spec: dict | None = None, status: dict | None = None, name: str = "w", uid: str = UID,
             **meta: Any) -> dict:
    obj: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
                           "metadata": {"name": name, "namespace": "ns", "uid": uid, **meta}}
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return obj


def pod(name: str, labels: dict | None = None, spec: dict | None = None, status: dict | None = None,
        **meta: Any) -> dict:
    p: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": "ns", "labels": labels or {}, **meta},
                         "spec": spec if spec is not None else {"containers": [{"name": "main"}]}}
    if status is not None:
        p["status"] = status
    return p


def run(doc: dict, obj: dict | None = None, pods: list[dict] | None = None,
        options: EngineOptions = DEFAULT_OPTIONS) -> dict:
    d = load(doc)
    assert d.valid, errors(d)
    return interpret(copy.deepcopy(obj if obj is not None else workload()), d,
                     copy.deepcopy(pods) if pods is not None else None, options=options)


class Failure:
    """What failed in one interpretation: a 422 (`result` None) or a partial result's errors."""

    def __init__(self, errors: list[dict], result: dict | None = None):
        self.errors, self.result = errors, result


def run_error(doc: dict, obj: dict | None = None, pods: list[dict] | None = None) -> Failure:
    """The errors of an interpretation expected to fail in some part (status, a component or
    the gang are computed independently: one failing part leaves a partial result)."""
    d = load(doc)
    assert d.valid, errors(d)
    try:
        out = interpret(copy.deepcopy(obj if obj is not None else workload()), d, pods)
    except InterpretationError as e:
        return Failure(e.errors)
    assert out["complete"] is False and out["errors"], "expected a part of the interpretation to fail"
    return Failure(out["errors"], out)


def run_fatal(doc: dict, obj: dict | None = None, pods: list[dict] | None = None) -> InterpretationError:
    """An interpretation that cannot give anything (every part failed, or a bad envelope)."""
    d = load(doc)
    assert d.valid, errors(d)
    with pytest.raises(InterpretationError) as ei:
        interpret(copy.deepcopy(obj if obj is not None else workload()), d, pods)
    return ei.value


def error_messages(e: Failure | InterpretationError) -> list[str]:
    return [x["message"] for x in e.errors]


def one_error(doc: dict, obj: dict | None = None) -> str:
    msgs = error_messages(run_error(doc, obj))
    assert len(msgs) == 1, msgs
    return msgs[0]


def pod_template(gpus: int | str | None = None, cpu: str | None = None, memory: str | None = None,
                 labels: dict | None = None, limits: bool = False) -> dict:
    res: dict[str, Any] = {}
    for k, v in (("nvidia.com/gpu", gpus), ("cpu", cpu), ("memory", memory)):
        if v is not None:
            res[k] = v
    c: dict[str, Any] = {"name": "main", "image": "img"}
    if res:
        c["resources"] = {"limits" if limits else "requests": res}
    return {"metadata": {"labels": labels or {}}, "spec": {"containers": [c]}}


def node(tree: dict, *path: str) -> dict:
    """Descend the tree by child component names."""
    cur = tree
    for name in path:
        matches = [c for c in cur["children"] if c["name"] == name]
        assert len(matches) == 1, (name, [c["name"] for c in cur["children"]])
        cur = matches[0]
    return cur


def instance(tree_node: dict, id_: str | None) -> dict:
    matches = [i for i in tree_node["instances"] if i["id"] == id_]
    assert len(matches) == 1, (id_, [i["id"] for i in tree_node["instances"]])
    return matches[0]
