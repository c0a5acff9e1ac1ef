"""GET /workloads filters, orders and pages on a real API server, from the live model and from
direct reads alike: phase, labelSelector (on the workload's labels), minGpus, sort, limit and
continue; rows carry labels, createdAt and components."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS
from .kubeobjects import Kubectl
from .util import eventually, fixture_object

NS = "list-queries"
FIXTURES = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/"
# name, fixture (phase), labels
WORKLOADS = [("pretrain", "running.yaml", {"team": "a", "tier": "gold"}),
             ("finetune", "failed.yaml", {"team": "b"}),
             ("eval", "completed.yaml", {"team": "a"}),
             ("queued", "suspended.yaml", {})]


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> None:
    kubectl.ensure_namespace(NS)
    for name, fixture, labels in WORKLOADS:
        obj, status = fixture_object(FIXTURES + fixture, NS, name)
        obj["metadata"]["labels"] = labels
        kubectl.set_status(kubectl.apply(obj), status)


@pytest.fixture(scope="module")
def direct(apiserver: ApiServer, world: None) -> Iterator[Server]:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--karta-resources", "false", "--cache", "false")
    yield s
    s.stop()


@pytest.fixture(params=["model", "direct"])
def client(request: pytest.FixtureRequest, service: Server, world: None) -> httpx.Client:
    s = service if request.param == "model" else request.getfixturevalue("direct")
    c = s.client()
    eventually(lambda: len(c.get("/workloads", params={"namespace": NS}).json()["items"]) == len(WORKLOADS),
               timeout=30, what="the workloads listed")
    return c


def names(body: dict[str, Any]) -> list[str]:
    return [r["workload"]["name"] for r in body["items"]]


def test_rows_carry_labels_age_and_components(client: httpx.Client) -> None:
    rows = {r["workload"]["name"]: r for r in client.get("/workloads", params={"namespace": NS}).json()["items"]}
    assert rows["pretrain"]["labels"] == {"team": "a", "tier": "gold"} and rows["queued"]["labels"] == {}
    assert rows["pretrain"]["createdAt"]
    assert rows["pretrain"]["components"] == [{"name": "replicated-job", "pods": rows["pretrain"]["pods"]["desired"]}]


def test_filters(client: httpx.Client) -> None:
    def q(**params: Any) -> list[str]:
        r = client.get("/workloads", params={"namespace": NS, **params})
        assert r.status_code == 200, r.text
        return names(r.json())

    phases = {r["workload"]["name"]: r["phase"] for r in
              client.get("/workloads", params={"namespace": NS}).json()["items"]}
    assert q(phase="Running") == [n for n in sorted(phases) if phases[n] == "Running"] == ["pretrain"]
    assert q(phase=f"Running,{phases['finetune']}") == ["finetune", "pretrain"]
    assert q(labelSelector="team=a") == ["eval", "pretrain"]
    assert q(labelSelector="team=a,tier") == ["pretrain"]
    assert q(labelSelector="!team") == ["queued"]
    assert q(minGpus=1) == [n for n in q(sort="-gpus") if n in q(minGpus=1)]
    assert set(q(minGpus=10**6)) == set()


def test_sort_and_pages(client: httpx.Client) -> None:
    everything = names(client.get("/workloads", params={"namespace": NS, "sort": "-gpus"}).json())
    seen: list[str] = []
    params: dict[str, Any] = {"namespace": NS, "sort": "-gpus", "limit": 1}
    while True:
        body = client.get("/workloads", params=params).json()
        seen += names(body)
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            break
        params["continue"] = token
    assert seen == everything and len(seen) == len(WORKLOADS)
    by_name = names(client.get("/workloads", params={"namespace": NS, "sort": "name"}).json())
    assert by_name == sorted(by_name)


@pytest.mark.parametrize("params,message", [
    ({"sort": "size"}, "sort"), ({"labelSelector": "team in a"}, "labelSelector"), ({"limit": 0}, "limit"),
    ({"continue": "x"}, "continue"), ({"sort": "-gpus", "watch": "true"}, "stream"),
])
def test_bad_queries_are_400_problems(client: httpx.Client, params: dict[str, Any], message: str) -> None:
    r = client.get("/workloads", params={"namespace": NS, **params})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert message in r.json()["detail"]


def test_a_filtered_stream_adds_and_removes_rows_as_they_come_to_match(service: Server, kubectl: Kubectl,
                                                                       world: None) -> None:
    """`?watch=true&labelSelector=`: the matching rows, then a row relabelled into the selector is
    ADDED and one relabelled out of it is DELETED (the client held it), as a filtered list reads."""
    import json
    import threading

    c = service.client()
    eventually(lambda: len(c.get("/workloads", params={"namespace": NS}).json()["items"]) == len(WORKLOADS),
               timeout=30, what="the workloads listed")
    events: list[dict[str, Any]] = []
    done = threading.Event()

    def read() -> None:
        with httpx.stream("GET", service.url + "/workloads", timeout=30,
                          params={"namespace": NS, "labelSelector": "team=a", "watch": "true"}) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.strip():
                    events.append(json.loads(line))
                if done.is_set():
                    return

    t = threading.Thread(target=read, daemon=True)
    t.start()

    def seen(type_: str, name: str) -> bool:
        return any(e["type"] == type_ and e.get("object", {}).get("workload", {}).get("name") == name for e in events)

    eventually(lambda: any(e["type"] == "BOOKMARK" and e.get("initialEventsEnd") for e in events), timeout=15,
               what="the initial rows")
    initial = [e["object"]["workload"]["name"] for e in events if e["type"] == "ADDED"]
    assert sorted(initial) == ["eval", "pretrain"]

    def relabel(name: str, labels: dict[str, str]) -> None:
        obj = kubectl.get("jobset.x-k8s.io/v1alpha2", "JobSet", NS, name)
        old = obj["metadata"].get("labels") or {}
        kubectl.patch(obj, {"metadata": {"labels": {**{k: None for k in old}, **labels}}})

    try:
        relabel("finetune", {"team": "a"})
        eventually(lambda: seen("ADDED", "finetune"), timeout=15, what="finetune ADDED")
        relabel("pretrain", {"team": "c"})
        eventually(lambda: seen("DELETED", "pretrain"), timeout=15, what="pretrain DELETED")
        assert not seen("ADDED", "queued") and not seen("DELETED", "queued")  # never matched: never sent
    finally:
        done.set()
        relabel("finetune", {"team": "b"})
        relabel("pretrain", {"team": "a", "tier": "gold"})
