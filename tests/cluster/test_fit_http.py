"""POST /fit on a real API server and a real `wlmap serve --auth kubernetes` (the suite's
`secured` service, home cluster only): Nodes created with their status, a pod bound to one of
them, then JobSet manifests fitted: one that fits (the placement names the nodes and never
over-commits one), one that needs more GPUs than any node has free (the shortfall names the most
free on one node, and which), one that selects a tainted node it does not tolerate, and a caller
who may not `list nodes` (forbidden, no figure, no node named).

Every JobSet here selects this module's nodes by a label of its own, so the nodes other tests
create in the shared API server are filtered out."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.service.models import FitResponse, LiveInterpretation

from ..model.test_capacity_live import _delete_all, _node, _pod
from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import token
from .kubeobjects import Kubectl
from .util import eventually

HOME = "local"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
NOT_LISTED = "not allowed to list nodes in this cluster"


@dataclass
class World:
    label: str  # this module's node label key
    a: str  # 8 GPUs, 2 of them held by a bound pod
    b: str  # 4 GPUs
    tainted: str  # 8 GPUs, tainted dedicated=batch:NoSchedule
    ns: str = ""


def schedulable_node(api: ApiServer, name: str, labels: dict[str, str], alloc: dict[str, str],
                     taints: list[dict[str, str]] | None = None) -> None:
    """A Ready node with these taints only: the API server's TaintNodesByCondition admission
    taints a new node not-ready, and no node controller runs here to lift it."""
    _node(api, name, labels, alloc)
    api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints or []}},
             content_type="application/merge-patch+json")


@pytest.fixture(scope="module")
def world(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[World]:
    sfx = uuid.uuid4().hex[:6]
    ns = f"fit-{sfx}"
    w = World(f"wlmap.test/fit-{sfx}", f"fit-{sfx}-a", f"fit-{sfx}-b", f"fit-{sfx}-tainted", ns)
    big = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    paths = [f"/api/v1/namespaces/{ns}/pods/held"] + [f"/api/v1/nodes/{n}" for n in (w.a, w.b, w.tainted)] + [
        f"/api/v1/namespaces/{ns}"]
    kubectl.ensure_namespace(ns)
    try:
        schedulable_node(apiserver, w.a, {w.label: "gpu"}, big)
        schedulable_node(apiserver, w.b, {w.label: "gpu"}, big | {GPU: "4"})
        schedulable_node(apiserver, w.tainted, {w.label: "tainted"}, big,
                         [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}])
        kubectl.apply(_pod(ns, "held", w.a, [{"cpu": "1", "memory": "1Gi", GPU: "2"}]))
        yield w
    finally:
        _delete_all(apiserver, paths)


def _jobset(name: str, pods: int, gpus: int, selector: dict[str, str], tolerations: list[dict[str, str]]
            ) -> dict[str, Any]:
    pod_spec = {"restartPolicy": "Never", "nodeSelector": selector, "tolerations": tolerations,
                "containers": [{"name": "trainer", "image": "x", "resources": {
                    "requests": {"cpu": "4", "memory": "16Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": "x"},
            "spec": {"replicatedJobs": [{"name": "trainer", "replicas": 1, "template": {"spec": {
                "parallelism": pods, "completions": pods, "template": {"spec": pod_spec}}}}]}}


def _fit(c: httpx.Client, body: dict[str, Any], **params: str) -> dict[str, Any]:
    """The home cluster's verdict, once the inventory holds this module's nodes and pod."""
    def ready() -> dict[str, Any] | None:
        r = c.post("/fit", json=body, params=params)
        assert r.status_code == 200, r.text
        doc = r.json()
        (row,) = doc["clusters"]
        return doc if row["available"] else None

    doc, _ = eventually(ready, timeout=30, what="capacity ready for /fit")
    FitResponse.model_validate(doc)
    return doc


@pytest.fixture(scope="module")
def admin(secured: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token('admin')}"}, timeout=30) as c:
        yield c


def test_a_jobset_that_fits_is_placed_without_over_committing(admin: httpx.Client, world: World) -> None:
    body = {"object": _jobset("fits", 2, 4, {world.label: "gpu"}, [GPU_TOLERATION])}

    def settled() -> dict[str, Any] | None:  # the bound pod counted: node a has 6 free
        doc = _fit(admin, body)
        return doc if doc["clusters"][0]["fits"] and world.a in str(doc["clusters"][0]["placement"]) else None

    doc, _ = eventually(settled, timeout=30, what="a placement on both nodes")
    (row,) = doc["clusters"]
    assert doc["best"] == HOME and row["cluster"] == HOME and row["exact"] is True
    assert doc["groups"] == [{"name": "replicated-job/trainer", "component": "replicated-job", "instance": "trainer",
                              "pods": 2, "gang": doc["groups"][0]["gang"], "topologyKey": None,
                              "requests": {"cpu": "4", "memory": "16Gi", GPU: "4"},
                              "requestValues": {"cpu": 4000, "memory": 16 * 1024**3, GPU: 4}}]
    assert doc["groups"][0]["gang"]  # the JobSet is one gang
    # 6 and 4 GPUs free: one 4-GPU pod on each
    assert row["placement"] == [{"component": "replicated-job", "instance": "trainer", "pods": 2,
                                 "nodes": {world.a: 1, world.b: 1}}]
    assert row["sets"] == 1 and row["message"] == "fits now: 1 complete copy at once" and row["policy"] == "pack"
    assert row["shortfall"] == []


def test_more_gpus_than_any_node_has_free(admin: httpx.Client, world: World) -> None:
    doc = _fit(admin, {"object": _jobset("big", 1, 8, {world.label: "gpu"}, [GPU_TOLERATION])}, policy="spread")
    (row,) = doc["clusters"]
    assert doc["best"] is None and row["fits"] is False and row["sets"] == 0 and doc["policy"] == "spread"
    why = f"no node has 8 free {GPU} (the most on one node is 6: {world.a})"
    assert row["shortfall"] == [{"component": "replicated-job", "instance": "trainer", "resource": GPU,
                                 "perPod": "8", "perPodValue": 8, "pods": 1, "podsUnplaced": 1,
                                 "largestFree": {"node": world.a, "free": "6", "value": 6}, "reason": why}]
    assert row["message"] == why and row["placement"] == []


def test_a_taint_the_pod_does_not_tolerate(admin: httpx.Client, world: World) -> None:
    doc = _fit(admin, {"object": _jobset("tainted", 1, 1, {world.label: "tainted"}, [GPU_TOLERATION])})
    (row,) = doc["clusters"]
    assert row["fits"] is False
    assert {s["largestFree"] for s in row["shortfall"]} == {None}  # no node passes: nothing is free to it
    assert row["message"].startswith("no node passes the filters: ")
    assert "node has taint dedicated=batch:NoSchedule the pod does not tolerate (1 node)" in row["message"]
    # tolerated, it fits there
    tolerated = [GPU_TOLERATION, {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
    doc = _fit(admin, {"object": _jobset("tolerated", 1, 1, {world.label: "tainted"}, tolerated)})
    assert [p["nodes"] for p in doc["clusters"][0]["placement"]] == [{world.tainted: 1}]


def test_a_caller_without_list_nodes_gets_no_figure(secured: Server, world: World) -> None:
    body = {"object": _jobset("fits", 2, 4, {world.label: "gpu"}, [GPU_TOLERATION])}
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token('bob')}"}, timeout=30) as c:
        r = c.post("/fit", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    FitResponse.model_validate(doc)
    assert doc["clusters"] == [{"cluster": HOME, "available": False, "state": "forbidden", "fits": None,
                                "message": NOT_LISTED}]
    assert doc["best"] is None and doc["totals"]["pods"] == 2
    assert world.a not in r.text and world.b not in r.text


def test_bad_requests(admin: httpx.Client) -> None:
    r = admin.post("/fit", json={"object": _jobset("x", 1, 1, {}, [])}, params={"clusters": "no-such"})
    assert r.status_code == 404 and r.json()["type"].endswith("cluster-not-found"), r.text
    r = admin.post("/fit", json={"object": _jobset("x", 1, 1, {}, [])}, params={"policy": "random"})
    assert r.status_code == 422, r.text
    # YAML, and a cluster named
    r = admin.post("/fit", content=f"object:\n  apiVersion: v1\n  kind: Pod\n  metadata: {{name: p}}\n"
                                   f"  spec: {{containers: [{{name: c, image: x}}]}}\n",
                   headers={"Content-Type": "application/yaml"}, params={"clusters": HOME})
    assert r.status_code == 200 and r.json()["groups"][0]["pods"] == 1, r.text


def _waiting(ns: str, name: str, gpus: int, label: str) -> dict[str, Any]:
    """A bare pod no scheduler binds here: Pending, unscheduled."""
    pod = _pod(ns, name, None, [{"cpu": "1", "memory": "1Gi", GPU: str(gpus)}])
    pod["spec"] |= {"nodeSelector": {label: "gpu"}, "tolerations": [GPU_TOLERATION]}
    return pod


def test_pending_pods_that_fit_nowhere_are_diagnosed_no_capacity(
        admin: httpx.Client, world: World, kubectl: Kubectl, apiserver: ApiServer) -> None:
    pods = [f"/api/v1/namespaces/{world.ns}/pods/{n}" for n in ("wait-big", "wait-small")]
    spare = f"{world.a}-spare"
    try:
        kubectl.apply(_waiting(world.ns, "wait-big", 8, world.label))
        kubectl.apply(_waiting(world.ns, "wait-small", 1, world.label))

        def no_capacity(name: str) -> list[dict[str, Any]]:
            r = admin.get(f"/workloads/{world.ns}/{name}")
            assert r.status_code == 200, r.text
            LiveInterpretation.model_validate(r.json())
            return [e for e in r.json()["diagnosis"] if e["reason"] == "NoCapacity"]

        (entry,), _ = eventually(lambda: no_capacity("wait-big"), timeout=30, what="the NoCapacity entry")
        assert entry == {"severity": "error", "reason": "NoCapacity", "component": entry["component"], "pods": 1,
                         "since": None, "fitsIn": [],
                         "message": f"fits nowhere in this cluster now: no node has 8 free {GPU} "
                                    f"(the most on one node is 6: {world.a})"}
        assert entry["component"]
        assert no_capacity("wait-small") == []  # 1 GPU fits: something else holds it back
        # a node with room comes: the verdict goes
        schedulable_node(apiserver, spare, {world.label: "gpu"}, {"cpu": "64", "memory": "512Gi", GPU: "8",
                                                                   "pods": "110"})
        eventually(lambda: no_capacity("wait-big") == [], timeout=30, what="the entry gone once it fits")
    finally:
        _delete_all(apiserver, [*pods, f"/api/v1/nodes/{spare}"])
