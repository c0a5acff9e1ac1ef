"""Capacity over HTTP, on a real API server and a real `wlmap serve --auth kubernetes`: the
`capacity` of /clusters and /clusters/{c} (withheld without the caller's `list nodes` right, given
with it), GET /clusters/{c}/nodes (selector, pages, 403, 404, 400), figures following a pod as it
comes and goes, the capacity series of /metrics/workloads, and capacity without a model
(`--cache false`: built from one list).

The service runs with `--pool-label` set to this module's own label, so its two nodes form pools
no other test's nodes join; the caller without rights is a service account of this module (a
fresh name: the service's access cache and other tests' users are not shared)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.model.listed import LIST_TTL
from app.service.models import ClusterStatus, NodeList

from ..model.test_capacity_live import _delete_all, _node, _pod
from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS, token
from .kubeobjects import Kubectl
from .util import eventually

HOME = "local"
GPU = "nvidia.com/gpu"
RBAC = "rbac.authorization.k8s.io/v1"
NOT_LISTED = "not allowed to list nodes in this cluster"
FORBIDDEN = {"capacity": None, "capacityVisible": False, "capacityState": "forbidden", "capacityReason": NOT_LISTED}


@dataclass
class World:
    sfx: str
    ns: str
    pool_label: str
    gpu: str  # node names
    cpu: str
    viewer: str  # the service account's token: may get /clusters and /metrics/workloads, not list nodes
    role: str  # the ClusterRole (and binding) that lets it list nodes, when a test applies it


def _binding(name: str, ns: str, sa: str) -> dict[str, Any]:
    return {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}


@pytest.fixture(scope="module")
def world(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[World]:
    sfx = uuid.uuid4().hex[:6]
    ns, sa = f"caph-{sfx}", "viewer"
    w = World(sfx, ns, f"wlmap.test/caph-{sfx}", f"caph-{sfx}-gpu", f"caph-{sfx}-cpu", "", f"caph-{sfx}-nodes")
    views = f"caph-{sfx}-views"
    paths = [f"/api/v1/nodes/{n}" for n in (w.gpu, w.cpu)] + [
        f"/apis/{RBAC}/clusterrolebindings/{n}" for n in (views, w.role)] + [
        f"/apis/{RBAC}/clusterroles/{n}" for n in (views, w.role)] + [
        f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}", f"/api/v1/namespaces/{ns}"]
    kubectl.ensure_namespace(ns)
    try:
        run = {"wlmap.test/run": sfx}
        _node(apiserver, w.gpu, run | {w.pool_label: "gpu"},
              {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"})
        _node(apiserver, w.cpu, run | {w.pool_label: "cpu"}, {"cpu": "16", "memory": "64Gi", "pods": "110"})
        kubectl.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}})
        kubectl.apply({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": views},
                       "rules": [{"nonResourceURLs": ["/clusters", "/metrics/workloads"], "verbs": ["get"]}]})
        kubectl.apply(_binding(views, ns, sa))
        w.viewer = apiserver.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token",
                                  {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                   "spec": {"expirationSeconds": 3600}})["status"]["token"]
        yield w
    finally:
        _delete_all(apiserver, paths)


@pytest.fixture(scope="module")
def srv(apiserver: ApiServer, world: World) -> Iterator[Server]:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "kubernetes", "--karta-resources", "false", "--pool-label", world.pool_label)
    yield s
    s.stop()


def _client(s: Server, bearer: str) -> httpx.Client:
    return httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {bearer}"}, timeout=30)


def _pool(cap: dict[str, Any], label: str, value: str) -> dict[str, Any]:
    return next(p for p in cap["pools"] if p["label"] == f"{label}={value}")


def _ready_capacity(c: httpx.Client) -> dict[str, Any]:
    cap, _ = eventually(lambda: c.get(f"/clusters/{HOME}").json()["capacity"], timeout=30, what="capacity ready")
    return cap


def test_capacity_is_withheld_without_list_nodes_and_given_with_it(
        srv: Server, world: World, kubectl: Kubectl, apiserver: ApiServer) -> None:
    c = _client(srv, world.viewer)
    one = c.get(f"/clusters/{HOME}")
    assert one.status_code == 200, one.text
    assert {k: v for k, v in one.json().items() if k.startswith("capacity")} == FORBIDDEN  # not even a count
    ClusterStatus.model_validate(one.json())
    listed = c.get("/clusters").json()["items"]
    assert [{k: v for k, v in i.items() if k.startswith("capacity")} for i in listed if i["name"] == HOME] == [
        FORBIDDEN]
    nodes = c.get(f"/clusters/{HOME}/nodes")
    assert nodes.status_code == 403 and nodes.json()["detail"] == NOT_LISTED, nodes.text
    # the same refusal for a cluster that holds nothing it may see: asked before anything is read
    assert c.get(f"/clusters/{HOME}/nodes", params={"labelSelector": "no=such"}).json() == nodes.json()
    metrics = c.get("/metrics/workloads")
    assert metrics.status_code == 200 and "wlmap_cluster_free{" not in metrics.text

    kubectl.apply({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": world.role},
                   "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})
    kubectl.apply(_binding(world.role, world.ns, "viewer"))
    try:
        cap = _ready_capacity(c)  # a denial is cached for 5 s at most
        ClusterStatus.model_validate(c.get(f"/clusters/{HOME}").json())
        item = c.get(f"/clusters/{HOME}").json()
        assert (item["capacityVisible"], item["capacityState"], item["capacityReason"]) == (True, "ready", None)
        assert cap["watching"] and cap["partial"] is None
        gpu = _pool(cap, world.pool_label, "gpu")
        assert (gpu["nodes"], gpu["nodeCounts"]) == (1, {"total": 1, "ready": 1, "schedulable": 1})
        # quantities as Kubernetes strings, the same figures as integers in base units beside them
        assert gpu["allocatable"] == {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
        assert gpu["allocatableValues"] == {"cpu": 64000, "memory": 512 * 1024**3, GPU: 8, "pods": 110}
        assert (gpu["requested"]["memory"], gpu["free"]["memory"]) == ("0", "512Gi")
        assert (gpu["largestFree"]["cpu"], gpu["largestFreeNodes"]["cpu"]) == ("64", world.gpu)
        cpu = _pool(cap, world.pool_label, "cpu")
        assert (cpu["largestFree"]["cpu"], cpu["largestFreeValues"]["cpu"], cpu["largestFreeNodes"]["cpu"]) == (
            "16", 16000, world.cpu)
        # the pools are ordered by --pool-label, then value; nodes of other tests have no such label
        assert [p["value"] for p in cap["pools"][:2]] == ["cpu", "gpu"]
        assert cap["pools"][-1]["label"] is None or len(cap["pools"]) == 2
        assert c.get(f"/clusters/{HOME}/nodes", params={"labelSelector": f"wlmap.test/run={world.sfx}"}
                     ).status_code == 200
    finally:
        _delete_all(apiserver, [f"/apis/{RBAC}/clusterrolebindings/{world.role}",
                                f"/apis/{RBAC}/clusterroles/{world.role}"])


def test_the_nodes_route_selects_pages_and_refuses(srv: Server, world: World) -> None:
    c = _client(srv, token("admin"))
    _ready_capacity(c)
    sel = {"labelSelector": f"wlmap.test/run={world.sfx}"}
    whole = c.get(f"/clusters/{HOME}/nodes", params=sel).json()
    assert [n["name"] for n in whole["items"]] == [world.cpu, world.gpu]  # sorted by name
    NodeList.model_validate(whole)
    assert whole["cluster"] == HOME and whole["watching"] is True and whole["metadata"] == {}
    g = whole["items"][1]
    assert g["allocatableValues"] == {"cpu": 64000, "memory": 512 * 1024**3, GPU: 8, "pods": 110}
    assert g["pool"] == {"label": world.pool_label, "value": "gpu"} and g["schedulable"] and g["ready"]
    assert g["freeValues"][GPU] == 8 and g["requestedValues"]["pods"] == 0 and g["pods"] == 0
    assert g["allocatable"] == {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    assert g["free"]["memory"] == "512Gi" and g["requested"] == {"pods": "0"}
    # pages: limit and the opaque continue token, tied to the selector it was made for
    first = c.get(f"/clusters/{HOME}/nodes", params={**sel, "limit": 1}).json()
    assert [n["name"] for n in first["items"]] == [world.cpu] and first["metadata"]["continue"]
    second = c.get(f"/clusters/{HOME}/nodes", params={**sel, "limit": 1, "continue": first["metadata"]["continue"]})
    assert [n["name"] for n in second.json()["items"]] == [world.gpu] and not second.json()["metadata"]
    other = c.get(f"/clusters/{HOME}/nodes", params={"limit": 1, "continue": first["metadata"]["continue"]})
    assert other.status_code == 400 and "another query" in other.json()["detail"], other.text
    one = c.get(f"/clusters/{HOME}/nodes", params={"labelSelector": f"{world.pool_label}=gpu"}).json()
    assert [n["name"] for n in one["items"]] == [world.gpu]
    bad = c.get(f"/clusters/{HOME}/nodes", params={"labelSelector": "a in (b"})
    assert bad.status_code == 400 and bad.json()["type"].endswith("invalid-list-query"), bad.text
    assert c.get(f"/clusters/{HOME}/nodes", params={"limit": 0}).status_code == 400
    assert c.get(f"/clusters/{HOME}/nodes", params={"continue": "junk"}).status_code == 400
    missing = c.get("/clusters/no-such-cluster/nodes")
    assert missing.status_code == 404 and "no-such-cluster" in missing.json()["detail"]
    assert httpx.get(srv.url + f"/clusters/{HOME}/nodes").status_code == 401


def test_figures_follow_a_pod_coming_and_going(srv: Server, world: World, kubectl: Kubectl,
                                               apiserver: ApiServer) -> None:
    c = _client(srv, token("admin"))
    _ready_capacity(c)
    path = f"/api/v1/namespaces/{world.ns}/pods/train"

    def gpus() -> tuple[int, int, int]:
        pool = _pool(c.get(f"/clusters/{HOME}").json()["capacity"], world.pool_label, "gpu")
        node = c.get(f"/clusters/{HOME}/nodes", params={"labelSelector": f"{world.pool_label}=gpu"}).json()
        return pool["freeValues"][GPU], pool["largestFreeValues"][GPU], node["items"][0]["freeValues"][GPU]

    try:
        start = time.monotonic()
        kubectl.apply(_pod(world.ns, "train", world.gpu, [{"cpu": "2", "memory": "8Gi", GPU: "4"}]))
        eventually(lambda: gpus() == (4, 4, 4), timeout=5, what="the pod's 4 GPUs taken")
        came = time.monotonic() - start
        taken = _pool(c.get(f"/clusters/{HOME}").json()["capacity"], world.pool_label, "gpu")
        assert (taken["requested"]["cpu"], taken["free"]["cpu"]) == ("2", "62")
        assert (taken["requestedValues"]["memory"], taken["free"]["memory"]) == (8 * 1024**3, "504Gi")
        assert taken["requestedValues"]["pods"] == 1
        start = time.monotonic()
        _delete_all(apiserver, [path])
        eventually(lambda: gpus() == (8, 8, 8), timeout=5, what="the 4 GPUs given back")
        print(f"a pod seen in capacity after {came:.3f} s, its deletion after {time.monotonic() - start:.3f} s")
    finally:
        _delete_all(apiserver, [path])


def test_metrics_give_allocatable_and_free_per_cluster_pool_and_resource(srv: Server, world: World) -> None:
    c = _client(srv, token("admin"))
    _ready_capacity(c)
    text = c.get("/metrics/workloads").text
    labels = f'cluster="{HOME}",pool="gpu",pool_label="{world.pool_label}",resource="{GPU}"'
    assert f"wlmap_cluster_allocatable{{{labels}}} 8.0" in text
    assert f"wlmap_cluster_free{{{labels}}} 8.0" in text
    cpu = f'cluster="{HOME}",pool="cpu",pool_label="{world.pool_label}",resource="cpu"'
    assert f"wlmap_cluster_allocatable{{{cpu}}} 16000.0" in text
    assert "# TYPE wlmap_cluster_free gauge" in text


def test_without_a_model_capacity_comes_from_one_list(direct: Server, world: World, kubectl: Kubectl,
                                                      apiserver: ApiServer) -> None:
    """--cache false: the node and pod lists, read again when older than LIST_TTL."""
    c = httpx.Client(base_url=direct.url, timeout=30)
    item = c.get(f"/clusters/{HOME}").json()
    ClusterStatus.model_validate(item)
    assert (item["capacityVisible"], item["capacityState"], item["capacityReason"]) == (True, "ready", None)
    assert item["capacity"]["watching"] is False and item["capacity"]["nodes"]["total"] >= 2
    sel = {"labelSelector": f"wlmap.test/run={world.sfx}"}

    def gpu_free() -> int:
        page = c.get(f"/clusters/{HOME}/nodes", params=sel).json()
        NodeList.model_validate(page)
        assert [n["name"] for n in page["items"]] == [world.cpu, world.gpu]
        return int(page["items"][1]["freeValues"][GPU])

    assert gpu_free() == 8
    path = f"/api/v1/namespaces/{world.ns}/pods/listed"
    try:
        kubectl.apply(_pod(world.ns, "listed", world.gpu, [{"cpu": "1", GPU: "2"}]))
        start = time.monotonic()
        eventually(lambda: gpu_free() == 6, timeout=LIST_TTL + 10, what="the bound pod in the next list")
        seen = time.monotonic() - start
        assert seen <= LIST_TTL + 5, seen
        print(f"--cache false: a bound pod seen in capacity after {seen:.3f} s (lists at most every {LIST_TTL:g} s)")
    finally:
        _delete_all(apiserver, [path])


