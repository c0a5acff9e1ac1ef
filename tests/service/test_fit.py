"""POST /fit without a cluster, and the answer's pieces (app/service/fit.py); on a real API
server: tests/cluster/test_fit_http.py."""

from __future__ import annotations

import httpx
import pytest

from app.capacity.plan import Plan, ResourceNeed, Shortfall
from app.service.fit import _answer, _rank, request_of
from app.service.problems import ProblemError

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}


def test_without_a_cluster_there_is_nothing_to_fit_on(client: httpx.Client) -> None:
    r = client.post("/fit", json=POD)
    assert r.status_code == 501 and r.json()["type"].endswith("no-cluster"), r.text
    r = client.post("/fit", json={"object": POD, "policy": "tight"})
    assert r.status_code == 422 and {e["path"] for e in r.json()["errors"]} == {"policy"}, r.text
    r = client.post("/fit", content="a: 1\n---\nb: 2\n", headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400, r.text


def test_a_body_is_a_manifest_or_an_envelope() -> None:
    assert request_of(POD).object == POD and request_of(POD).policy == "binpack"
    req = request_of({"object": POD, "policy": "spread", "clusters": ["a"]})
    assert (req.policy, req.clusters) == ("spread", ["a"])
    with pytest.raises(ProblemError):
        request_of({"object": POD, "pods": []})  # no pods: a fit is of the desired pods


def test_clusters_rank_fitting_first_then_sets_then_name() -> None:
    rows = [{"cluster": "c", "fits": False, "sets": 0}, {"cluster": "z", "fits": True, "sets": 3},
            {"cluster": "a", "available": False}, {"cluster": "b", "fits": True, "sets": 3},
            {"cluster": "d", "fits": True, "sets": 9}]
    assert [r["cluster"] for r in sorted(rows, key=_rank)] == ["d", "b", "z", "a", "c"]


def test_a_shortfall_reads_as_a_sentence() -> None:
    need = ResourceNeed("nvidia.com/gpu", 8, 4, "node-17")
    why = "no node has 8 free nvidia.com/gpu; the most free on one node is 4 (node-17)"
    p = Plan(False, 0, {}, {"w": Shortfall("w", 2, 0, (need,), why)}, True)
    row = _answer("a", p, None)
    assert row["reason"] == f"does not fit now: w: {why}"
    assert row["shortfall"]["w"]["resources"] == [{"resource": "nvidia.com/gpu", "perPod": 8, "perPodQuantity": "8",
                                                   "mostFree": 4, "mostFreeQuantity": "4", "node": "node-17"}]
    unproven = _answer("a", Plan(False, 0, {}, {"w": Shortfall("w", 2, 0, (need,), why)}, False), None)
    assert unproven["reason"].endswith("(first-fit verdict, not proven)")
    fits = _answer("a", Plan(True, 2, {"w": (("n1", 2),)}, {}, True, "spread"), "partial")
    assert fits["placement"] == {"w": [{"node": "n1", "pods": 2}]} and fits["partial"] == "partial"
    assert fits["reason"] == "fits now: 2 complete copies at once (spread)"
