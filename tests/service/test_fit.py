"""POST /fit without a cluster, and the answer's pieces (app/service/fit.py,
app/capacity/answers.py); on a real API server: tests/cluster/test_fit_http.py."""

from __future__ import annotations

import httpx
import pytest

from app.capacity import answers
from app.capacity.nodes import Node
from app.capacity.plan import Plan, PodGroup, ResourceNeed, Shortfall, plan
from app.service.fit import options, request_of
from app.service.problems import ProblemError

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
GPU = "nvidia.com/gpu"


def test_without_a_cluster_there_is_nothing_to_fit_on(client: httpx.Client) -> None:
    r = client.post("/fit", json=POD)
    assert r.status_code == 501 and r.json()["type"].endswith("no-cluster"), r.text
    r = client.post("/fit?policy=tight", json=POD)
    assert r.status_code == 422, r.text  # the query's policy is one of pack | spread
    r = client.post("/fit", json={"object": POD, "policy": "spread"})
    assert r.status_code == 422 and {e["path"] for e in r.json()["errors"]} == {"policy"}, r.text  # not in the body
    r = client.post("/fit", content="a: 1\n---\nb: 2\n", headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400, r.text


def test_a_body_is_a_manifest_or_an_envelope_and_options_come_from_the_query() -> None:
    assert request_of(POD).object == POD and request_of({"object": POD}).object == POD
    with pytest.raises(ProblemError):
        request_of({"object": POD, "pods": []})  # no pods: a fit is of the desired pods
    assert options(None, None) == ("pack", [])
    assert options("spread", " a, b,,a ") == ("spread", ["a", "b"])
    with pytest.raises(ProblemError) as e:
        options("tight", None)
    assert e.value.status == 400


def test_clusters_rank_fitting_first_then_sets_then_name() -> None:
    rows = [{"cluster": "c", "available": True, "fits": False, "sets": 0},
            {"cluster": "z", "available": True, "fits": True, "sets": 3},
            {"cluster": "a", "available": False, "fits": None},
            {"cluster": "b", "available": True, "fits": True, "sets": 3},
            {"cluster": "d", "available": True, "fits": True, "sets": 9}]
    ranked = answers.ranked(rows)
    assert [r["cluster"] for r in ranked] == ["d", "b", "z", "c", "a"]
    assert answers.best(ranked) == "d" and answers.best(ranked[3:]) is None


def test_a_shortfall_reads_as_a_sentence_per_component_and_resource() -> None:
    group = PodGroup("trainer/0", 2, {GPU: 8, "cpu": 2000}, component="trainer", instance="0")
    why = "no node has 8 free nvidia.com/gpu (the most on one node is 4: node-17)"
    needs = (ResourceNeed(GPU, 8, 4, "node-17", True), ResourceNeed("cpu", 2000, 9000, "node-17", False))
    p = Plan(False, 0, {}, {"trainer/0": Shortfall("trainer/0", 2, 0, needs, why, 2)}, True)
    row = answers.verdict("a", p, [group])
    assert row["message"] == why and row["fits"] is False and row["placement"] == []
    assert row["shortfall"] == [{"component": "trainer", "instance": "0", "resource": GPU, "perPod": "8",
                                 "perPodValue": 8, "pods": 2, "podsUnplaced": 2,
                                 "largestFree": {"node": "node-17", "free": "4", "value": 4}, "reason": why}]
    unproven = answers.verdict("a", Plan(False, 0, {}, p.shortfall, False), [group])
    assert unproven["message"].endswith("(first-fit found no placement; not proven that none exists)")
    fits = answers.verdict("a", Plan(True, 2, {"trainer/0": (("n1", 1), ("n2", 1))}, {}, True, "spread"), [group],
                           "partial")
    assert fits["placement"] == [{"component": "trainer", "instance": "0", "pods": 2, "nodes": {"n1": 1, "n2": 1}}]
    assert fits["partial"] == "partial" and fits["shortfall"] == [] and fits["policy"] == "spread"
    assert fits["message"] == "fits now: 2 complete copies at once"


def test_a_plan_that_does_not_fit_reads_the_contracts_way() -> None:
    """The contract's example: 8-GPU pods, the most on one node 4 (node-17)."""
    nodes = [Node(n, allocatable={GPU: 8, "cpu": 64000, "pods": 110}) for n in ("node-3", "node-17")]
    free = {"node-3": {GPU: 2, "cpu": 64000, "pods": 110}, "node-17": {GPU: 4, "cpu": 64000, "pods": 110}}
    groups = [PodGroup("trainer", 2, {GPU: 8}), PodGroup("launcher", 1, {"cpu": 1000})]
    row = answers.verdict("a", plan(groups, nodes, free), groups)
    assert row["message"] == "trainer: no node has 8 free nvidia.com/gpu (the most on one node is 4: node-17)"
    assert [(s["component"], s["resource"], s["podsUnplaced"], s["largestFree"]) for s in row["shortfall"]] == [
        ("trainer", GPU, 2, {"node": "node-17", "free": "4", "value": 4})
    ]
    # a filter no node passes: every requested resource, no largest free
    tainted = [Node("t", allocatable={GPU: 8, "pods": 9}, unschedulable=True)]
    lone = [PodGroup("w", 1, {GPU: 1})]
    row = answers.verdict("a", plan(lone, tainted, {"t": {GPU: 8, "pods": 9}}), lone)
    assert [(s["resource"], s["largestFree"]) for s in row["shortfall"]] == [(GPU, None), ("pods", None)]
    assert row["message"].startswith("no node passes the filters: ")


def test_a_group_reads_with_quantities_beside_integers() -> None:
    g = PodGroup("w", 3, {"memory": 2 * 1024**3, "cpu": 1500})
    assert answers.group(g) == {"name": "w", "component": "w", "instance": None, "pods": 3,
                                "requests": {"cpu": "1500m", "memory": "2Gi"},
                                "requestValues": {"cpu": 1500, "memory": 2 * 1024**3},
                                "gang": None, "topologyKey": None}
