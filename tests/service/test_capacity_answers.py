"""app/service/capacity.py without a cluster: what `capacity` says for each kind of member and
caller, quantities beside integers, the nodes route's pages, and the capacity series (the
real-server side is tests/cluster/test_capacity_http.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any
from unittest.mock import create_autospec

import pytest

from app.model.capacity import CapacityUnavailable
from app.model.live import LiveModel
from app.service import capacity
from app.service.auth import unavailable
from app.service.problems import ProblemError

POOLS = ("nvidia.com/gpu.product",)
GPU = "nvidia.com/gpu"


def _res(alloc: int, req: int, best: dict[str, Any] | None) -> dict[str, Any]:
    return {"allocatable": alloc, "requested": req, "free": alloc - req, "largestFree": best}


FIGURES = {
    "available": True, "state": "ready", "reason": None, "partial": None, "watching": True,
    "nodes": {"total": 2, "ready": 2, "schedulable": 1},
    "resources": {"cpu": _res(16000, 17500, None), GPU: _res(8, 4, {"amount": 4, "node": "n1"}),
                  "memory": _res(64 * 1024**3, 1024**3, {"amount": 63 * 1024**3, "node": "n1"})},
    "pools": [{"label": "nvidia.com/gpu.product", "value": "H100", "nodes": {"total": 1, "ready": 1, "schedulable": 1},
               "resources": {GPU: _res(8, 4, {"amount": 4, "node": "n1"})}}],
    "podsOnUnknownNodes": 0,
}
ROWS = [{"name": n, "allocatable": {"cpu": 4000, "pods": 10}, "requested": {"pods": 0},
         "free": {"cpu": 4000, "pods": 10}} for n in ("a", "b", "c")]


def _live(name: str = "c1") -> Any:
    model = create_autospec(LiveModel, instance=True)
    model.capacity.return_value = FIGURES
    model.nodes.return_value = ROWS
    model.capacity_partial.return_value = None
    model.capacity_state.return_value = ("ready", None)
    model.capacity_inventory = SimpleNamespace(watching=True)
    return SimpleNamespace(name=name, model=model, listed=None)


def _allow(answer: bool | Exception) -> Any:
    async def allow(verb: str, res: Any, namespace: str | None, name: str | None) -> bool:
        assert (verb, res.plural, namespace, name) == ("list", "nodes", None, None)  # cluster-scoped
        if isinstance(answer, Exception):
            raise answer
        return answer

    return allow


def test_without_list_nodes_nothing_is_read_and_no_figure_is_given() -> None:
    m = _live()
    got = asyncio.run(capacity.for_caller(_allow(False), m, POOLS))  # type: ignore[arg-type]
    assert got.fields() == {"capacity": None, "capacityVisible": False, "capacityState": "forbidden",
                            "capacityReason": "not allowed to list nodes in this cluster"}
    m.model.capacity.assert_not_called()


def test_with_list_nodes_the_figures_read_as_quantities_with_values_beside_them() -> None:
    got = asyncio.run(capacity.for_caller(_allow(True), _live(), POOLS)).fields()  # type: ignore[arg-type]
    assert (got["capacityVisible"], got["capacityState"], got["capacityReason"]) == (True, "ready", None)
    cap = got["capacity"]
    assert cap["nodes"] == {"total": 2, "ready": 2, "schedulable": 1}
    assert cap["free"] == {"cpu": "-1500m", GPU: "4", "memory": "63Gi"}
    assert cap["freeValues"] == {"cpu": -1500, GPU: 4, "memory": 63 * 1024**3}
    assert cap["allocatable"]["cpu"] == "16" and cap["requested"][GPU] == "4"
    assert cap["largestFree"] == {GPU: "4", "memory": "63Gi"}  # no schedulable node offers cpu here
    assert cap["largestFreeNodes"] == {GPU: "n1", "memory": "n1"}
    (pool,) = cap["pools"]
    assert (pool["label"], pool["key"], pool["value"], pool["nodes"]) == ("nvidia.com/gpu.product=H100",
                                                                           "nvidia.com/gpu.product", "H100", 1)
    assert (pool["free"], pool["largestFree"], pool["allocatable"]) == ({GPU: "4"}, {GPU: "4"}, {GPU: "8"})
    assert FIGURES["resources"]["cpu"].keys() == {"allocatable", "requested", "free", "largestFree"}  # not edited


def test_members_without_a_model_say_why() -> None:
    connecting = SimpleNamespace(name="d", model=None, listed=None)  # not connected yet: neither model nor lists
    seen = asyncio.run(capacity.for_caller(_allow(True), connecting, POOLS))  # type: ignore[arg-type]
    assert (seen.visible, seen.state, seen.reason, seen.summary) == (True, "unavailable", capacity.NOT_CONNECTED, None)
    stored = SimpleNamespace(name="s", model=object(), listed=None)  # a store's model: no inventory
    seen = asyncio.run(capacity.for_caller(_allow(True), stored, POOLS))  # type: ignore[arg-type]
    assert seen.reason == capacity.NO_INVENTORY
    with pytest.raises(CapacityUnavailable, match="not connected"):
        asyncio.run(capacity.node_page(connecting, None, None, None, POOLS))  # type: ignore[arg-type]


def test_a_cluster_whose_rights_cannot_be_checked_says_so_in_its_item() -> None:
    got = asyncio.run(capacity.add_to_items(
        [{"name": "c1"}, {"name": "gone"}], {"c1": _live()},  # type: ignore[dict-item]
        lambda m: _allow(unavailable("cluster c1 is connecting; access cannot be checked")), POOLS))
    assert got[0] == {"name": "c1", "capacity": None, "capacityVisible": False, "capacityState": "unavailable",
                      "capacityReason": "cluster c1 is connecting; access cannot be checked"}
    assert got[1]["capacityReason"] == "the cluster is not connected"  # a Secret that could not be used
    assert got[1]["capacity"] is None


def _page(*args: Any) -> dict[str, Any]:
    return asyncio.run(capacity.node_page(*args))


def test_node_pages_by_name_with_a_token_good_for_its_selector_only() -> None:
    m = _live()
    first = _page(m, "x=y", 2, None, POOLS)  # type: ignore[arg-type]
    assert [r["name"] for r in first["items"]] == ["a", "b"] and first["metadata"]["continue"]
    assert first["items"][0]["allocatable"] == {"cpu": "4", "pods": "10"}
    assert first["items"][0]["allocatableValues"] == {"cpu": 4000, "pods": 10}
    token = first["metadata"]["continue"]
    rest = _page(m, "x=y", 2, token, POOLS)  # type: ignore[arg-type]
    assert [r["name"] for r in rest["items"]] == ["c"] and rest["metadata"] == {}
    assert rest["cluster"] == "c1" and rest["watching"] is True and rest["partial"] is None
    for selector, limit, cont, words in [("x=z", 2, token, "another query"), ("x=y", None, "junk", "not a token"),
                                         ("a in (b", None, None, "labelSelector"), (None, 0, None, "limit")]:
        with pytest.raises(ProblemError) as e:
            _page(m, selector, limit, cont, POOLS)  # type: ignore[arg-type]
        assert e.value.status == 400 and words in e.value.detail


def test_series_only_for_clusters_the_caller_may_list_nodes_in() -> None:
    members = [_live("c1"), _live("c2")]
    text = asyncio.run(capacity.metric_text(
        members, lambda m: _allow(m.name == "c1"), POOLS)).decode()  # type: ignore[arg-type]
    labels = 'cluster="c1",pool="H100",pool_label="nvidia.com/gpu.product",resource="nvidia.com/gpu"'
    assert f"wlmap_cluster_free{{{labels}}} 4.0" in text
    assert 'wlmap_cluster_allocatable{cluster="c1",pool="H100"' in text
    assert 'cluster="c2"' not in text
