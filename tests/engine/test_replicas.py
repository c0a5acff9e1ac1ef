"""Replica revision and divide (issue 32 item 1) over every fixture of the built-in catalog: a
count written through a component's replicasPath reads back with exactly that change; where it
cannot be written the refusal names the component and why; divided parts add up."""

from __future__ import annotations

import asyncio
import copy
from functools import lru_cache
from pathlib import Path

import jsonpatch
import pytest
import yaml

from app.documents import parse_documents
from app.engine import replicas as R
from app.engine.divide import divide, gang_components, shares
from app.engine.interpret import interpret
from app.engine.update import UpdateError
from app.karta.load import load_builtin
from app.karta.registry import Registry

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
FIXTURES = sorted(CATALOG.glob("**/testdata/*.yaml"))
# Counts other components' counts or bounds are computed from: writing one alone does not read
# back (the refusal names where the interpretation also moves).
COUPLED = {
    "leaderworkerset.x-k8s.io/LeaderWorkerSet/v1": "leader",  # workers = replicas x (size - 1)
    "apps.nvidia.com/NIMService/v1alpha1": "nim",  # multi-node: the LWS workers follow
    "apps.nvidia.com/NIMPipeline/v1alpha1": "nim",
    "serving.kserve.io/LLMInferenceService/v1alpha1": "main",  # multi-node workers follow
    "serving.kserve.io/LLMInferenceService/v1alpha2": "main|prefill",
    "batch.volcano.sh/Job/v1alpha1": "task",  # minAvailable defaults to replicas
    "batch.volcano.sh/CronJob/v1alpha1": "task",
    "kubeflow.org/MPIJob/v1": "launcher",
}


@lru_cache(maxsize=1)
def _registry() -> Registry:
    return Registry.of(load_builtin())


def _workloads(path: Path) -> list[dict]:
    return [d for d in parse_documents(path.read_bytes()) if isinstance(d, dict) and _registry().resolve_object(d)]


def _cases() -> list[tuple[Path, int]]:
    return [(f, i) for f in FIXTURES for i in range(len(_workloads(f)))]


def _run(coro):
    return asyncio.run(coro)


def _kind(fixture: Path) -> str:
    return str(fixture.parent.parent.relative_to(CATALOG))


@pytest.mark.parametrize("fixture,index", _cases(), ids=lambda v: str(v.relative_to(CATALOG)) if isinstance(v, Path)
                         else str(v))
def test_a_count_reads_back_with_exactly_that_change(fixture: Path, index: int):
    obj = _workloads(fixture)[index]
    d = _registry().resolve_object(obj)
    before = interpret(obj, d)

    async def ev(o):
        return interpret(o, d)

    for c in d.karta.components:
        if c.scale_definition is None or not c.scale_definition.replicas_path:
            with pytest.raises(UpdateError, match=f"component {c.name}: the definition gives no scaleDefinition"):
                R.slot(d, obj, before, c.name)
            continue
        try:
            s = R.slot(d, obj, before, c.name)
        except UpdateError as e:
            assert e.message.startswith(f"component {c.name}: ") and e.component == c.name
            assert any(w in e.message for w in ("computed", "location(s) for", "not writable", "could not be read"))
            continue
        asked = {}
        for k, (inst, v) in enumerate(s.current.items()):
            b, n = s.bounds[inst], (v or 0) + 1 + k  # a different count per instance: alignment matters
            if b.get("maxReplicas") is not None and n > b["maxReplicas"]:
                n = b.get("minReplicas") or 0
            asked[c.name if inst is None else f"{c.name}/{inst}"] = n
        original = copy.deepcopy(obj)
        done = _run(R.revise(d, obj, before, None, None, asked, ev))
        assert obj == original
        if done.moved:
            assert c.name in COUPLED.get(_kind(fixture), "").split("|"), (c.name, done.moved)
            continue
        read = R.nodes(done.after["tree"])[c.name]["instances"]
        got = {(c.name if i["id"] is None else f"{c.name}/{i['id']}"): i["replicas"] for i in read}
        assert got == asked
        assert jsonpatch.apply_patch(original, done.rewrite.patch) == done.rewrite.object
        assert [w["form"] for w in done.rewrite.writes] == ["replicas"] * len(s.locations)


def _load(rel: str) -> dict:
    return yaml.safe_load((CATALOG / rel).read_text())


def _revise(obj: dict, asked: dict, set_: dict | None = None):
    d = _registry().resolve_object(obj)
    before = interpret(obj, d)

    async def ev(o):
        return interpret(o, d)

    return _run(R.revise(d, obj, before, set_, None, asked, ev))


def test_a_defaulted_count_is_written_where_it_is_read_first():
    dep = _load("apps/Deployment/v1/testdata/running.yaml")
    dep["spec"].pop("replicas", None)
    done = _revise(dep, {"deployment": 5})
    assert done.moved == [] and done.rewrite.object["spec"]["replicas"] == 5
    assert done.after["totals"]["pods"] == 5


def test_one_instance_of_several_locations_leaves_the_others():
    """`task/worker` alone: the worker's location is written, the master's stays as it was."""
    vc = _load("batch.volcano.sh/Job/v1alpha1/testdata/running.yaml")
    done = _revise(vc, {"task/worker": 6})
    assert done.moved == []
    assert {t["name"]: t["replicas"] for t in done.rewrite.object["spec"]["tasks"]} == {"master": 1, "worker": 6}
    assert [w["instance"] for w in done.rewrite.writes] == ["worker"]


def test_set_and_replicas_together():
    dep = _load("apps/Deployment/v1/testdata/running.yaml")
    done = _revise(dep, {"deployment": 2}, {"schedulerName": "kai-scheduler"})
    assert done.moved == []
    assert done.rewrite.object["spec"]["replicas"] == 2
    assert done.rewrite.object["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"
    assert {w["form"] for w in done.rewrite.writes} == {"podTemplateSpec", "replicas"}


@pytest.mark.parametrize("rel,asked,message", [
    ("leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml", {"worker": 3},
     "component worker: its replicas are computed"),
    ("apps/Deployment/v1/testdata/running.yaml", {"nope": 3}, "component nope: no such component"),
    ("apps/Deployment/v1/testdata/running.yaml", {"deployment/x": 3}, "component deployment: no instance 'x'"),
    ("apps/Deployment/v1/testdata/running.yaml", {"deployment": -1}, "must be an integer from 0"),
    ("apps/DaemonSet/v1/testdata/running.yaml", {"daemonset": 3}, "component daemonset: its replicas are read from "
                                                                   "/status/desiredNumberScheduled"),
    ("serving.kserve.io/InferenceService/v1beta1/testdata/running-raw-gpu.yaml", {"predictor": 99}, "above predictor's maxReplicas"),
])
def test_refusals_name_the_component_and_why(rel: str, asked: dict, message: str):
    with pytest.raises(UpdateError, match=message) as e:
        _revise(_load(rel), asked)
    assert e.value.field.startswith("replicas")


def test_kserve_min_follows_the_count_it_is_read_from():
    isvc = _load("serving.kserve.io/InferenceService/v1beta1/testdata/running-raw-gpu.yaml")
    done = _revise(isvc, {"predictor": 1})
    assert done.moved == []
    inst = R.nodes(done.after["tree"])["predictor"]["instances"][0]
    assert inst["replicas"] == inst["minReplicas"] == 1


def test_shares_are_largest_remainder_and_add_up():
    assert shares(3, [2, 1, 1]) == [1, 1, 1]
    assert shares(10, [2, 1]) == [7, 3]
    assert shares(7, [1, 1]) == [4, 3]  # a tie: the cluster listed first
    assert shares(5, [0, 3]) == [0, 5]
    for total in range(0, 30):
        for w in ([1], [3, 2], [5, 1, 1], [1, 2, 3, 4]):
            assert sum(shares(total, w)) == total


def test_divide_a_deployment_by_weight():
    dep = _load("apps/Deployment/v1/testdata/running.yaml")
    d = _registry().resolve_object(dep)

    async def ev(o):
        return interpret(o, d)

    n = dep["spec"]["replicas"]
    out = _run(divide(d, dep, interpret(dep, d), [("a", 2), ("b", 1)], ev))
    assert out["divided"] and out["kept"] == []
    assert [p["cluster"] for p in out["parts"]] == ["a", "b"]
    assert sum(p["replicas"]["deployment"] for p in out["parts"]) == n
    for p in out["parts"]:
        assert p["object"]["metadata"]["name"] == dep["metadata"]["name"]
        assert p["object"]["spec"]["replicas"] == p["replicas"]["deployment"] == p["totals"]["pods"]


def test_divide_keeps_a_gang_whole():
    js = _load("jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml")
    d = _registry().resolve_object(js)
    assert gang_components(d) == {c.name for c in d.karta.components}

    async def ev(o):
        return interpret(o, d)

    out = _run(divide(d, js, interpret(js, d), [("a", 1), ("b", 3)], ev))
    assert not out["divided"] and [p["cluster"] for p in out["parts"]] == ["b"]
    assert out["parts"][0]["object"] == js and out["kept"][0]["component"] == "replicated-job"
