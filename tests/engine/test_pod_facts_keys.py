"""Pod facts (requests, their strings, values and accelerator counts, sums per replica count) are
cached by what determines them, not by the whole pod definition (issue 24): two workloads whose
pods differ only in names, images, env or labels share the entries; any change to what the
scheduler's request arithmetic reads does not, and every answer equals an uncached one.  (The
pod views, which do read names, images and labels, are cached by the whole definition.)"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.engine import interpret as interpret_mod
from app.engine.interpret import interpret
from app.engine.memo import Memo
from app.engine.options import EngineOptions
from app.engine.requests import pod_requests_key
from app.karta.load import load_builtin
from app.karta.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
JOBSET = json.loads((ROOT / "benchmarks" / "data" / "jobset-16k.json").read_text())
DEFINITION = Registry.of(load_builtin()).resolve_object(JOBSET)
UNCACHED = EngineOptions(jq_results=None)  # every call computes from its object


@pytest.fixture()
def facts(monkeypatch: pytest.MonkeyPatch) -> Memo:
    cache: Memo = Memo(maxsize=4096, max_bytes=64 * 1024 * 1024)
    monkeypatch.setattr(interpret_mod, "_pod_facts", cache)
    monkeypatch.setattr(interpret_mod, "_pod_views", Memo(maxsize=4096))
    return cache


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [rj["template"]["spec"]["template"]["spec"]["containers"][0] for rj in obj["spec"]["replicatedJobs"]]


def _specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [rj["template"]["spec"]["template"]["spec"] for rj in obj["spec"]["replicatedJobs"]]


def _another_run(obj: dict[str, Any]) -> dict[str, Any]:
    """The same workload as another team member's run: new name, uid, labels, env, image tag."""
    out = json.loads(json.dumps(obj).replace("llm-pretrain", "llm-finetune-42"))
    out["metadata"]["uid"] = "00000000-1111-2222-3333-444444444444"
    for c in _containers(out):
        c["env"] = [{"name": "RUN", "value": "42"}] + c["env"]
        c["image"] = c["image"] + "-rc1"
        c["name"] = c["name"] + "-x"
    for rj in out["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["metadata"]["labels"]["run"] = "42"
    return out


def _uncached(obj: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setattr(interpret_mod, "_pod_facts", Memo(maxsize=4096))
        m.setattr(interpret_mod, "_pod_views", Memo(maxsize=4096))
        assert DEFINITION is not None
        return interpret(obj, DEFINITION, options=UNCACHED)


def test_workloads_differing_in_names_env_images_labels_share_the_pod_facts(facts: Memo,
                                                                            monkeypatch: pytest.MonkeyPatch):
    assert DEFINITION is not None
    interpret(JOBSET, DEFINITION, options=UNCACHED)
    entries = dict(facts)
    assert len(entries) == 3  # trainer, evaluator, coordinator: three distinct resource layouts
    other = _another_run(JOBSET)
    got = interpret(other, DEFINITION, options=UNCACHED)
    assert dict(facts) == entries and all(facts[k] is v for k, v in entries.items())  # shared, none added
    assert got == _uncached(other, monkeypatch)  # and the answer is exactly the uncached one
    pods = [i["pod"] for c in got["tree"]["children"] for i in c["instances"]]
    assert [p["containers"][0]["image"] for p in pods] == [c["image"] for c in _containers(other)]
    assert all(p["labels"]["run"] == "42" for p in pods)  # the view is the workload's own


def _cpu(obj: dict[str, Any]) -> None:
    _containers(obj)[0]["resources"]["requests"]["cpu"] = "9"


def _limit_only(obj: dict[str, Any]) -> None:
    del _containers(obj)[0]["resources"]["requests"]["memory"]  # defaulted from the limit: same value
    _containers(obj)[0]["resources"]["limits"]["memory"] = "70Gi"


def _sidecar(obj: dict[str, Any]) -> None:
    _specs(obj)[0]["initContainers"] = [{"name": "proxy", "image": "p", "restartPolicy": "Always",
                                         "resources": {"requests": {"cpu": "3"}}}]


def _init(obj: dict[str, Any]) -> None:  # runs alone, before the others: the pod needs its 12 CPUs
    _specs(obj)[0]["initContainers"] = [{"name": "proxy", "image": "p",
                                         "resources": {"requests": {"cpu": "12"}}}]


def _overhead(obj: dict[str, Any]) -> None:
    _specs(obj)[0]["overhead"] = {"cpu": "250m"}


def _pod_level(obj: dict[str, Any]) -> None:
    _specs(obj)[0]["resources"] = {"requests": {"cpu": "20"}}


@pytest.mark.parametrize("change", [_cpu, _limit_only, _sidecar, _init, _overhead, _pod_level],
                         ids=lambda f: f.__name__.strip("_"))
def test_workloads_differing_in_what_requests_read_do_not_share(change: Callable[[dict[str, Any]], None],
                                                                facts: Memo, monkeypatch: pytest.MonkeyPatch):
    assert DEFINITION is not None
    first = interpret(JOBSET, DEFINITION, options=UNCACHED)
    other = copy.deepcopy(JOBSET)
    change(other)
    got = interpret(other, DEFINITION, options=UNCACHED)
    assert len(facts) == 4  # the changed trainer template has an entry of its own
    assert got == _uncached(other, monkeypatch)
    assert _trainer(got) != _trainer(first)
    assert got["totals"] != first["totals"]


def _trainer(result: dict[str, Any]) -> dict[str, str]:
    [pod] = [i["pod"] for i in result["tree"]["children"][0]["instances"] if i["id"] == "trainer"]
    return pod["requests"]


def test_a_sidecar_and_an_init_container_have_distinct_keys():
    init = {"containers": [{"resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "a", "resources": {"requests": {"cpu": "3"}}}]}
    sidecar = copy.deepcopy(init)
    sidecar["initContainers"][0]["restartPolicy"] = "Always"
    renamed = copy.deepcopy(init)
    renamed["initContainers"][0].update(name="b", image="i", env=[{"name": "X", "value": "1"}])
    assert pod_requests_key(init) != pod_requests_key(sidecar)
    assert pod_requests_key(init) == pod_requests_key(renamed)
    assert pod_requests_key({"containers": [{"resources": {"requests": {"cpu": 2**70}}}]}) is None
