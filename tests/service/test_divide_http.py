"""`replicas` in `POST /interpret/update` and `POST /divide` over HTTP (a real service process):
counts written through the definition's replicasPath, refusals by name as problem+json."""

from __future__ import annotations

import copy
from pathlib import Path

import httpx
import jsonpatch
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = yaml.safe_load((ROOT / "definitions/apps/Deployment/v1/testdata/running.yaml").read_text())
JOBSET = yaml.safe_load((ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml").read_text())
LWS = yaml.safe_load((ROOT / "definitions/leaderworkerset.x-k8s.io/LeaderWorkerSet/v1/testdata/available.yaml")
                     .read_text())


def _problem(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    return r.json()


def test_update_writes_a_count_and_reads_it_back(client: httpx.Client):
    r = client.post("/interpret/update", json={"object": DEPLOYMENT, "replicas": {"deployment": 7}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"]["spec"]["replicas"] == 7 and body["totals"]["pods"] == 7
    assert body["writes"] == [{"component": "deployment", "form": "replicas", "fields": ["replicas"],
                               "expression": body["writes"][0]["expression"], "path": "/spec/replicas",
                               "changed": True, "instance": None}]
    assert jsonpatch.apply_patch(copy.deepcopy(DEPLOYMENT), body["patch"]) == body["object"]
    both = client.post("/interpret/update", json={"object": DEPLOYMENT, "replicas": {"deployment": 2},
                                                   "set": {"labels": {"q": "a"}}}).json()
    assert both["object"]["spec"]["replicas"] == 2
    assert both["object"]["spec"]["template"]["metadata"]["labels"]["q"] == "a"


def test_update_refuses_counts_by_name(client: httpx.Client):
    p = _problem(client.post("/interpret/update", json={"object": LWS, "replicas": {"worker": 3}}), 422)
    assert p["errors"][0]["component"] == "worker" and "computed" in p["detail"]
    assert p["errors"][0]["path"] == "replicas.worker"
    p = _problem(client.post("/interpret/update", json={"object": LWS, "replicas": {"leader": 3}}), 422)
    assert p["type"].endswith("update-does-not-read-back")  # the workers are computed from it
    p = _problem(client.post("/interpret/update", json={"object": DEPLOYMENT}), 422)
    assert "give \"set\", \"replicas\" or both" in p["detail"]
    _problem(client.post("/interpret/update", json={"object": DEPLOYMENT, "replicas": {"deployment": "3"}}), 422)
    _problem(client.post("/interpret/update", json={"object": DEPLOYMENT, "replicas": {"deployment": -1}}), 422)


def test_divide_by_weight(client: httpx.Client):
    r = client.post("/divide", json={"object": DEPLOYMENT, "clusters": [{"name": "a", "weight": 2},
                                                                        {"name": "b", "weight": 1}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["divided"] and body["weights"] == {"a": 2, "b": 1}
    parts = body["parts"]
    assert sum(p["replicas"]["deployment"] for p in parts) == DEPLOYMENT["spec"]["replicas"]
    for p in parts:
        assert p["object"]["spec"]["replicas"] == p["replicas"]["deployment"] == p["totals"]["pods"]
        assert p["object"]["metadata"]["name"] == DEPLOYMENT["metadata"]["name"]


def test_divide_keeps_a_gang_whole(client: httpx.Client):
    body = client.post("/divide", json={"object": JOBSET, "clusters": [{"name": "a", "weight": 1},
                                                                       {"name": "b", "weight": 1}]}).json()
    assert not body["divided"] and [p["cluster"] for p in body["parts"]] == ["a"]
    assert body["parts"][0]["object"] == JOBSET and body["kept"]


def test_bad_divide_requests(client: httpx.Client):
    _problem(client.post("/divide", json={"object": DEPLOYMENT}), 422)
    _problem(client.post("/divide", json={"object": DEPLOYMENT, "clusters": [{"name": "a"}]}), 422)
    _problem(client.post("/divide", json={"object": DEPLOYMENT, "clusters": [{"name": "a", "weight": 0}]}), 422)
    _problem(client.post("/divide", json={"object": DEPLOYMENT, "clusters": [{"name": "a", "weight": 1},
                                                                            {"name": "a", "weight": 1}]}), 422)
    p = _problem(client.post("/divide", json={"object": DEPLOYMENT, "by": "capacity"}), 501)  # no cluster here
    assert p["type"].endswith("no-cluster")
