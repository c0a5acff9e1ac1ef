"""The NoCapacity pieces of app/capacity/answers.py: which pods of a live answer still wait, and
the entry (the fit's rows and sentences: tests/service/test_fit.py)."""

from __future__ import annotations

from typing import Any

from app.capacity import answers

GPU = "nvidia.com/gpu"


def _live(pods: list[dict[str, Any]], failed: bool = False) -> dict[str, Any]:
    worker = {"id": None, "pod": {"requestValues": {GPU: 8}}, "totals": {"pods": 3}}
    launcher = {"id": "l0", "pod": {"requestValues": {"cpu": 500}}, "totals": {"pods": 1}}
    doc: dict[str, Any] = {
        "tree": {"name": "job", "instances": [], "children": [
            {"name": "worker", "instances": [worker], "children": []},
            {"name": "launcher", "instances": [launcher], "children": []}]},
        "gang": {},
        "live": {"pods": pods},
    }
    if failed:
        doc["errors"] = [{"part": "component", "component": "worker"}]
    return doc


def _pod(component: str, instance: str | None, node: str | None, phase: str = "Pending") -> dict[str, Any]:
    return {"name": f"{component}-{node}", "component": component, "instance": instance, "node": node, "phase": phase}


def test_the_pods_that_wait_are_each_group_less_its_bound_pods() -> None:
    doc = _live([_pod("worker", None, "n1", "Running"), _pod("worker", None, None), _pod("launcher", "l0", "n2")])
    groups, left = answers.waiting(doc)  # type: ignore[misc]
    assert [(g.name, g.count) for g in groups] == [("worker", 3), ("launcher/l0", 1)]
    assert [(g.name, g.count, g.requests) for g in left] == [("worker", 2, {GPU: 8})]  # 3 desired, 1 bound


def test_nothing_waits_when_every_pod_is_bound_or_a_component_failed() -> None:
    assert answers.waiting(_live([_pod("worker", None, "n1", "Running")])) is None
    assert answers.waiting(_live([])) is None  # no pod yet: nothing is waiting on the scheduler
    assert answers.waiting(_live([_pod("worker", None, None, "Failed")])) is None  # ended, not waiting
    assert answers.waiting(_live([_pod("worker", None, None)], failed=True)) is None


def test_the_entry_quotes_the_verdict_and_names_where_it_fits() -> None:
    doc = _live([_pod("worker", None, None)])
    _, left = answers.waiting(doc)  # type: ignore[misc]
    here = {"fits": False, "message": "no node has 8 free nvidia.com/gpu (the most on one node is 4: n3)",
            "shortfall": [{"component": "worker", "resource": GPU}]}
    entry = answers.no_capacity(here, left, iter(["c", "b"]))  # 3 workers and the launcher wait
    assert entry == {"severity": "error", "reason": "NoCapacity", "component": "worker", "pods": 4, "since": None,
                     "message": "fits nowhere in this cluster now: no node has 8 free nvidia.com/gpu "
                                "(the most on one node is 4: n3)", "fitsIn": ["b", "c"]}
    two = answers.no_capacity(here | {"shortfall": [{"component": "a"}, {"component": "b"}]}, left, [])
    assert two["component"] is None and two["fitsIn"] == []
