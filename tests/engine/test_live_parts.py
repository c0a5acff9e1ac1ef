"""The live view in parts (engine/interpret.py `live_base`, `pod_parts`, `with_pods`): for every
catalog case with pods, the view assembled from parts computed pod by pod equals `interpret`
with all the pods at once, and a pod's change needs only that pod's part again."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.casefiles import case_folders
from app.documents import parse_documents
from app.engine.interpret import InterpretationError, interpret, live_base, pod_parts, with_pods
from app.karta.load import load_builtin
from app.karta.registry import Registry

CATALOG = Path(__file__).resolve().parents[2] / "definitions"


def _cases_with_pods() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    out = []
    for folder in case_folders(CATALOG):
        spec = parse_documents((folder / "cases.yaml").read_text())
        for case in (spec[0] or {}).get("cases", []):
            if not case.get("pods") or case.get("error"):
                continue
            (obj,) = [d for d in parse_documents((folder / case["input"]).read_text()) if isinstance(d, dict)]
            pods = [d for d in parse_documents((folder / case["pods"]).read_text()) if isinstance(d, dict)]
            out.append((f"{folder.relative_to(CATALOG)}:{case.get('name') or case['input']}", obj, pods))
    return out


CASES = _cases_with_pods()
REGISTRY = Registry.of(load_builtin())


def test_the_catalog_has_cases_with_pods():
    assert len(CASES) > 50


@pytest.mark.parametrize("name,obj,pods", CASES, ids=[c[0] for c in CASES])
def test_parts_pod_by_pod_equal_the_whole(name: str, obj: dict[str, Any], pods: list[dict[str, Any]]):
    d = REGISTRY.resolve_object(obj)
    assert d is not None
    try:
        whole = interpret(obj, d, pods)
    except InterpretationError:
        with pytest.raises(InterpretationError):
            pod_parts(live_base(obj, d), pods)
        return
    base = live_base(obj, d)
    one_by_one = [part for pod in pods for part in pod_parts(base, [pod])]
    assert orjson.dumps(with_pods(base, one_by_one)) == orjson.dumps(whole)
    # the same parts assemble the same view again: assembling leaves base and parts as they were
    assert orjson.dumps(with_pods(base, one_by_one)) == orjson.dumps(whole)


def _ready(pod: dict[str, Any], ready: bool) -> dict[str, Any]:
    p = copy.deepcopy(pod)
    conds = p.setdefault("status", {}).setdefault("conditions", [])
    conds[:] = [c for c in conds if c.get("type") != "Ready"]
    conds.append({"type": "Ready", "status": "True" if ready else "False"})
    return p


@pytest.mark.parametrize("name,obj,pods", CASES[::7], ids=[c[0] for c in CASES[::7]])
def test_one_pod_changed_needs_only_its_part(name: str, obj: dict[str, Any], pods: list[dict[str, Any]]):
    d = REGISTRY.resolve_object(obj)
    assert d is not None
    base = live_base(obj, d)
    parts = pod_parts(base, pods)
    for i, pod in enumerate(pods):
        was = any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])
        changed = pods[:i] + [_ready(pod, not was)] + pods[i + 1 :]
        patched = parts[:i] + pod_parts(base, [changed[i]]) + parts[i + 1 :]
        got, want = with_pods(base, patched), interpret(obj, d, changed)
        assert orjson.dumps(got) == orjson.dumps(want)
        assert got["live"]["ready"] != with_pods(base, parts)["live"]["ready"] or pod["metadata"]["name"] in got["live"]["unplaced"]


def test_every_pod_part_reads_odd_status_fields_as_data() -> None:
    """Each pod's part reads its row's fields whether the pod is placed or not: condition types
    and container states of any JSON shape are data (found by tests/fuzz/test_http_schema.py)."""
    d = REGISTRY.resolve(("apps", "v1", "Deployment"))
    assert d is not None
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "n", "uid": "u"},
           "spec": {"replicas": 1, "template": {"metadata": {"labels": {"a": "b"}},
                                                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
           "spec": {"containers": [{"name": "c", "image": "i"}]},
           "status": {"phase": "Running", "conditions": [{"type": [], "status": "True"}, {"type": "PodScheduled"}],
                      "containerStatuses": [{"name": "c", "state": ["waiting"]}, {"name": "d", "state": {"waiting": 1}}]}}
    got = interpret(obj, d, [pod])
    assert got["live"]["unplaced"] == ["p"] and got["live"]["current"] == 0
    assert orjson.dumps(with_pods(live_base(obj, d), pod_parts(live_base(obj, d), [pod]))) == orjson.dumps(got)
