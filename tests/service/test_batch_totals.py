"""POST /interpret/batch totals and ?groupBy= group totals over real HTTP (docs/api-contract.md "Groups"):
sums over the items that interpreted, exact quantity arithmetic, failures counted apart."""

from __future__ import annotations

import copy

import httpx
import yaml

from app.service.models import BatchResponse

from .conftest import ROOT
from .test_api import problem

TASK = yaml.safe_load((ROOT / "tests" / "data" / "manifests" / "batchtask-running.yaml").read_text())


def task(name: str, workers: int, labels: dict | None = None, **requests: str) -> dict:
    t = copy.deepcopy(TASK)
    t["metadata"].update(name=name, uid=f"uid-{name}", labels=labels or {})
    t["spec"]["workers"] = workers
    t["spec"]["podTemplate"]["spec"]["containers"][0]["resources"] = {"requests": requests}
    return t


def partial_without_totals(name: str, labels: dict) -> dict:
    t = task(name, 1, labels, cpu="7")
    t["spec"]["podTemplate"] = "not a template"  # the tree fails, the status still reads
    return t


def partial_with_totals(name: str, labels: dict) -> dict:
    t = task(name, 1, labels, cpu="1", memory="1Gi")
    t["status"]["state"] = 7  # the status fails, the tree (and so its totals) reads
    return t


ITEMS = [
    {"object": task("a0", 1, {"team": "a"}, cpu="500m", memory="1Gi", **{"nvidia.com/gpu": "1"})},
    {"object": task("b1", 1, {"team": "b"}, cpu="1.5", memory="512Mi")},
    {"object": task("a2", 1, {"team": "a"}, cpu="1.5", memory="512Mi")},
    {"object": {"apiVersion": "nope.io/v1", "kind": "X", "metadata": {"name": "x", "labels": {"team": "b"}}}},
    {"object": partial_without_totals("a4", {"team": "a"})},
    {"object": task("n5", 2, {"other": "x"}, cpu="250m", memory="1Gi")},
    {"object": partial_with_totals("b6", {"team": "b"})},
    {"ref": {"apiVersion": "acme.example.com/v1", "kind": "BatchTask", "namespace": "ns", "name": "t1"}},  # no cluster
]


def core(totals: dict) -> dict:
    """The counts, requests and failures; `accelerators` and `requestValues` (once items carry
    them) are checked apart."""
    return {k: totals[k] for k in ("pods", "gpus", "requests", "failed")}


def batch(client: httpx.Client, items: list, **params: str) -> dict:
    r = client.post("/interpret/batch", json={"items": items}, params=params)
    assert r.status_code == 200, r.text
    BatchResponse.model_validate(r.json())
    return r.json()


def test_batch_totals_sum_the_items_that_interpreted_exactly(client: httpx.Client):
    out = batch(client, ITEMS)
    items = out["items"]
    assert [("error" in i) for i in items] == [False, False, False, True, False, False, False, True]
    assert items[4]["complete"] is False and items[4]["totals"] is None  # partial, nothing whole to add
    assert items[6]["complete"] is False and items[6]["totals"]["pods"] == 1  # partial, totals known: added
    # cpu 500m + 1.5 + 1.5 + 2 x 250m + 1 = 5; memory 1Gi + 512Mi + 512Mi + 2 x 1Gi + 1Gi = 5Gi
    assert core(out["totals"]) == {"pods": 6, "gpus": 1, "failed": 3,
                                   "requests": {"cpu": "5", "memory": "5Gi", "nvidia.com/gpu": "1"}}
    if "requestValues" in items[0]["totals"]:  # integer maps are summed too
        assert out["totals"]["requestValues"] == {"cpu": 5000, "memory": 5 * 2**30, "nvidia.com/gpu": 1}
        assert out["totals"]["accelerators"] == {"nvidia.com/gpu": 1}
    assert "groups" not in out


def test_group_by_a_label_sums_each_value_null_last(client: httpx.Client):
    out = batch(client, ITEMS, groupBy="team")
    assert [(g["value"], g["items"]) for g in out["groups"]] == [("a", [0, 2, 4]), ("b", [1, 3, 6]), (None, [5, 7])]
    a, b, none = (core(g["totals"]) for g in out["groups"])
    assert a == {"pods": 2, "gpus": 1, "requests": {"cpu": "2", "memory": "1536Mi", "nvidia.com/gpu": "1"},
                 "failed": 1}
    assert b == {"pods": 2, "gpus": 0, "requests": {"cpu": "2500m", "memory": "1536Mi"}, "failed": 1}
    # the ref item could not be fetched: its labels are unknown, so it is in the null group
    assert none == {"pods": 2, "gpus": 0, "requests": {"cpu": "500m", "memory": "2Gi"}, "failed": 1}
    assert out["totals"]["pods"] == sum(g["totals"]["pods"] for g in out["groups"])


def test_group_by_a_label_nobody_has_is_one_null_group(client: httpx.Client):
    out = batch(client, ITEMS[:3], groupBy="example.com/pool")
    assert out["groups"] == [{"value": None, "items": [0, 1, 2], "totals": out["totals"]}]


def test_an_empty_batch_sums_to_zero(client: httpx.Client):
    out = batch(client, [], groupBy="team")
    assert out == {"items": [], "totals": {"pods": 0, "gpus": 0, "accelerators": {}, "requests": {}, "requestValues": {}, "failed": 0}, "groups": []}


def test_group_by_must_be_a_label_key(client: httpx.Client):
    problem(client.post("/interpret/batch", json={"items": []}, params={"groupBy": ""}), 422)
    problem(client.post("/interpret/batch", json={"items": []}, params={"groupBy": "k" * 318}), 422)
