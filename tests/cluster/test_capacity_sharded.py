"""Capacity on an API replica (`--role api`, which watches nothing), from what its shard writes
to the store: the suite's real API server, a real Redis, one `--role shard` and one `--role api`
process.  GET /clusters `capacity`, GET /clusters/{c}/nodes and POST /fit answer on the replica
as the single process (the suite's `service`, its own live model on the same API server) does,
and a change (a new bound pod, a deleted node) shows on the replica within a bounded wait."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from ..model.test_capacity_live import _delete_all, _pod
from ..service.conftest import Server
from ..store.redis_server import RedisServer
from .apiserver import ApiServer
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl, shard_lease_rbac
from .test_fit_http import GPU, GPU_TOLERATION, HOME, _jobset, schedulable_node
from .util import eventually

BOUND = 3.0  # seconds: the apiserver's watch, the shard's coalescing (1 s), the replica following the stream


@dataclass
class World:
    label: str
    ns: str
    a: str  # 8 GPUs, 2 held by a bound pod
    b: str  # 4 GPUs
    api: Server
    shard: Server


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as r:
        yield r


@pytest.fixture(scope="module")
def world(apiserver: ApiServer, kubectl: Kubectl, redis_server: RedisServer) -> Iterator[World]:
    sfx = uuid.uuid4().hex[:6]
    label, ns, a, b = f"wlmap.test/capsh-{sfx}", f"capsh-{sfx}", f"capsh-{sfx}-a", f"capsh-{sfx}-b"
    big = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    paths = (
        [f"/api/v1/namespaces/{ns}/pods/{p}" for p in ("held", "later")]
        + [f"/api/v1/nodes/{n}" for n in (a, b)]
        + [f"/api/v1/namespaces/{ns}"]
    )
    servers: list[Server] = []
    try:
        for doc in shard_lease_rbac("wlmap-service", SERVICE_NS):
            kubectl.apply(doc)
        kubectl.ensure_namespace(ns)
        schedulable_node(apiserver, a, {label: "gpu"}, big)
        schedulable_node(apiserver, b, {label: "gpu"}, big | {GPU: "4"})
        kubectl.apply(_pod(ns, "held", a, [{"cpu": "1", "memory": "1Gi", GPU: "2"}]))
        args = [
            "--kubeconfig",
            str(apiserver.kubeconfig("service")),
            "--namespace",
            SERVICE_NS,
            "--auth",
            "none",
            "--karta-resources",
            "false",
            "--store",
            redis_server.url,
            "--role",
        ]
        servers.append(Server(*args, "shard", env={"POD_NAME": f"capsh-{sfx}"}))
        servers.append(Server(*args, "api"))
        yield World(label, ns, a, b, servers[1], servers[0])
    finally:
        for s in servers:
            s.stop()
        _delete_all(apiserver, paths)


def _nodes(server: Server, label: str) -> dict[str, Any] | None:
    r = httpx.get(f"{server.url}/clusters/{HOME}/nodes", params={"labelSelector": label}, timeout=10)
    return r.json() if r.status_code == 200 else None


def _free(doc: dict[str, Any] | None) -> dict[str, int]:
    return {n["name"]: n["freeValues"].get(GPU, 0) for n in (doc or {}).get("items", [])}


def _capacity(server: Server) -> dict[str, Any]:
    return httpx.get(f"{server.url}/clusters/{HOME}", timeout=10).json()["capacity"]


def test_an_api_replica_answers_capacity_nodes_and_fit_as_the_single_process(world: World, service: Server) -> None:
    # the replica, once its shard has written the bound pod: the nodes route as the single process's
    eventually(
        lambda: _free(_nodes(world.api, world.label)) == {world.a: 6, world.b: 4},
        timeout=60,
        what="the shard's capacity on the API replica",
    )
    eventually(lambda: _free(_nodes(service, world.label)) == {world.a: 6, world.b: 4}, timeout=30)
    replica, single = _nodes(world.api, world.label), _nodes(service, world.label)
    assert replica == single, (replica, single)
    assert replica is not None and replica["partial"] is None and replica["watching"] is True
    row = replica["items"][0]
    assert (row["name"], row["ready"], row["schedulable"], row["pods"], row["labels"][world.label]) == (
        world.a,
        True,
        True,
        1,
        "gpu",
    )
    assert row["allocatableValues"][GPU] == 8 and row["requestedValues"]["cpu"] == 1000 and row["requested"]["cpu"] == "1"

    # GET /clusters/{c} capacity: the whole cluster's figures, equal once both have seen every
    # node and pod of the shared API server (other modules' come and go)
    def same() -> bool:
        a, b = _capacity(world.api), _capacity(service)
        return a == b and a is not None

    eventually(same, timeout=30, what="the same capacity on the replica and the single process")
    item = httpx.get(f"{world.api.url}/clusters", timeout=10).json()["items"][0]
    assert item["capacity"] is not None and (item["capacityVisible"], item["capacityState"]) == (True, "ready")

    # POST /fit: the same plan, naming this module's nodes
    body = {"object": _jobset("fits", 2, 4, {world.label: "gpu"}, [GPU_TOLERATION])}
    one = httpx.post(f"{service.url}/fit", json=body, timeout=30).json()
    two = httpx.post(f"{world.api.url}/fit", json=body, timeout=30).json()
    assert two == one and two["best"] == HOME
    assert [p["nodes"] for p in two["clusters"][0]["placement"]] == [{world.a: 1, world.b: 1}]

    # the API replica holds no watch: its /model says where the figures come from
    status = httpx.get(f"{world.api.url}/model", timeout=10).json()
    assert status["source"] == "store" and status["capacity"]["state"] == "ready"
    assert status["capacity"]["writtenAt"]


def test_a_new_bound_pod_and_a_deleted_node_show_on_the_replica_within_a_bound(
    world: World, apiserver: ApiServer, kubectl: Kubectl
) -> None:
    eventually(lambda: _free(_nodes(world.api, world.label)) == {world.a: 6, world.b: 4}, timeout=60)
    start = time.monotonic()
    kubectl.apply(_pod(world.ns, "later", world.b, [{"cpu": "1", GPU: "3"}]))
    _, took = eventually(
        lambda: _free(_nodes(world.api, world.label)) == {world.a: 6, world.b: 1},
        timeout=10,
        interval=0.02,
        what="the new pod on the replica",
    )
    print(f"a bound pod shown on the API replica {time.monotonic() - start:.2f} s after it was created")
    assert took < BOUND
    body = {"object": _jobset("big", 1, 4, {world.label: "gpu"}, [GPU_TOLERATION])}
    row = httpx.post(f"{world.api.url}/fit", json=body, timeout=30).json()["clusters"][0]
    assert [p["nodes"] for p in row["placement"]] == [{world.a: 1}]  # b has 1 free now

    start = time.monotonic()
    apiserver.call("DELETE", f"/api/v1/nodes/{world.a}")
    _, took = eventually(
        lambda: _free(_nodes(world.api, world.label)) == {world.b: 1},
        timeout=10,
        interval=0.02,
        what="the deleted node gone from the replica",
    )
    print(f"a deleted node gone from the API replica {time.monotonic() - start:.2f} s after")
    assert took < BOUND
    row = httpx.post(f"{world.api.url}/fit", json=body, timeout=30).json()["clusters"][0]
    assert row["fits"] is False and [s["resource"] for s in row["shortfall"]] == [GPU]
