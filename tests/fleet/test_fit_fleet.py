"""POST /fit over a fleet of three real API servers: each cluster's verdict from its own model,
ranked (fitting first, then more sets, then by name), and `best` the first that fits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.service.models import FitResponse

from ..cluster.test_fit_http import GPU, GPU_TOLERATION, _jobset, schedulable_node
from ..cluster.util import eventually
from ..model.test_capacity_live import _delete_all, _pod
from ..service.conftest import Server
from .conftest import Fleet

BIG = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}


@pytest.fixture(scope="module")
def label(fleet: Fleet) -> Iterator[str]:
    """b has two 8-GPU nodes, c one, a none (all with this module's label)."""
    sfx = uuid.uuid4().hex[:6]
    key = f"wlmap.test/fitf-{sfx}"
    made = {"b": [f"fitf-{sfx}-b1", f"fitf-{sfx}-b2"], "c": [f"fitf-{sfx}-c1"]}
    try:
        for cluster, names in made.items():
            for n in names:
                schedulable_node(fleet.servers[cluster], n, {key: "gpu"}, BIG)
        yield key
    finally:
        for cluster, names in made.items():
            _delete_all(fleet.servers[cluster], [f"/api/v1/nodes/{n}" for n in names])


def test_clusters_are_ranked_and_the_best_named(fleet_service: Server, label: str) -> None:
    c = httpx.Client(base_url=fleet_service.url, timeout=30)
    one = {"object": _jobset("one", 1, 8, {label: "gpu"}, [GPU_TOLERATION])}

    def answer(body: dict[str, Any], fitting: int) -> dict[str, Any] | None:
        r = c.post("/fit", json=body)
        assert r.status_code == 200, r.text
        doc = r.json()
        ok = all(row["available"] for row in doc["clusters"]) and sum(bool(row["fits"]) for row in doc["clusters"])
        return doc if ok == fitting else None

    doc, _ = eventually(lambda: answer(one, 2), timeout=60, what="both clusters' nodes in their models")
    FitResponse.model_validate(doc)
    assert [(r["cluster"], r["fits"], r["sets"]) for r in doc["clusters"]] == [
        ("b", True, 2), ("c", True, 1), ("a", False, 0)]
    assert doc["best"] == "b"
    # a holds no node with the label (other tests' nodes, if any, fail the nodeSelector)
    assert doc["clusters"][2]["message"] == "there are no nodes" or \
        doc["clusters"][2]["message"].startswith("no node passes the filters")

    # two 8-GPU pods at once: only b; named clusters only
    two = {"object": _jobset("two", 2, 8, {label: "gpu"}, [GPU_TOLERATION])}
    doc = c.post("/fit", json=two, params={"clusters": "c,b"}).json()
    assert [(r["cluster"], r["fits"]) for r in doc["clusters"]] == [("b", True), ("c", False)]
    assert doc["best"] == "b"
    (short,) = doc["clusters"][1]["shortfall"]  # one pod places on c's one node, the other does not
    assert (short["resource"], short["pods"], short["podsUnplaced"]) == ("nvidia.com/gpu", 2, 1)


def test_a_pod_that_fits_nowhere_in_its_cluster_names_where_it_would(fleet_service: Server, fleet: Fleet,
                                                                    label: str) -> None:
    """In a (no node with the label) a pod waits for 8 GPUs: NoCapacity, fitsIn b and c."""
    c = httpx.Client(base_url=fleet_service.url, timeout=30)
    name = f"wait-{uuid.uuid4().hex[:6]}"
    path = f"/api/v1/namespaces/default/pods/{name}"
    pod = _pod("default", name, None, [{"cpu": "1", "memory": "1Gi", GPU: "8"}])
    pod["spec"] |= {"nodeSelector": {label: "gpu"}, "tolerations": [GPU_TOLERATION]}
    fleet.servers["a"].call("POST", "/api/v1/namespaces/default/pods", pod)
    try:
        def entry() -> dict[str, Any] | None:
            r = c.get(f"/clusters/a/workloads/default/{name}")
            if r.status_code == 404:
                return None
            assert r.status_code == 200, r.text
            found = [e for e in r.json()["diagnosis"] if e["reason"] == "NoCapacity"]
            return found[0] if found and found[0]["fitsIn"] == ["b", "c"] else None

        got, _ = eventually(entry, timeout=60, what="NoCapacity naming b and c")
        assert got["message"].startswith("fits nowhere in this cluster now: ")
        assert got["pods"] == 1 and got["severity"] == "error"
    finally:
        _delete_all(fleet.servers["a"], [path])


def test_divide_by_capacity_weights_each_cluster_by_what_fits_now(fleet_service: Server, label: str) -> None:
    """POST /divide with by: capacity: one 8-GPU pod fits twice on b, once on c, never on a, so
    six replicas go 4 to b and 2 to c, and a gets no part."""
    c = httpx.Client(base_url=fleet_service.url, timeout=30)
    res = {"requests": {"cpu": "1", "memory": "1Gi", GPU: "8"}, "limits": {GPU: "8"}}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve", "namespace": "default"},
           "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "serve"}},
                    "template": {"metadata": {"labels": {"app": "serve"}},
                                 "spec": {"nodeSelector": {label: "gpu"}, "tolerations": [GPU_TOLERATION],
                                          "containers": [{"name": "m", "image": "i", "resources": res}]}}}}

    def answer() -> dict[str, Any] | None:
        r = c.post("/divide", json={"object": dep, "by": "capacity"})
        if r.status_code == 409:  # the models have not seen the nodes yet
            return None
        assert r.status_code == 200, r.text
        doc = r.json()
        return doc if len(doc["parts"]) == 2 else None

    doc, _ = eventually(answer, timeout=60, what="both clusters' nodes in their models")
    assert [(p["cluster"], p["replicas"]) for p in doc["parts"]] == [("b", {"deployment": 4}), ("c", {"deployment": 2})]
    assert [p["object"]["spec"]["replicas"] for p in doc["parts"]] == [4, 2]
    assert [(p["totals"]["pods"], p["totals"]["gpus"]) for p in doc["parts"]] == [(4, 32), (2, 16)]
