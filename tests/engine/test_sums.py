"""Sums of interpretation totals (app/engine/batch_totals.py): a batch's and a group's, exact."""

from __future__ import annotations

from app.engine.batch_totals import add_int_maps, add_quantity_maps, group_totals, item_totals, sum_totals
from app.engine.requests import to_strings


def t(pods=1, gpus=0, **requests) -> dict:
    return {"pods": pods, "gpus": gpus, "requests": requests}


def test_quantities_add_exactly_never_as_floats():
    got = sum_totals([t(cpu="500m", memory="1Gi"), t(cpu="1.5", memory="512Mi")])
    assert got["requests"] == {"cpu": "2", "memory": "1536Mi"}
    # 0.1 + 0.2 in floats is 0.30000000000000004: quantities stay exact
    assert sum_totals([t(cpu="100m"), t(cpu="200m")])["requests"] == {"cpu": "300m"}
    assert sum_totals([t(cpu="1n")] * 3)["requests"] == {"cpu": "3n"}


def test_counts_add_and_names_only_in_one_item_are_kept():
    got = sum_totals([t(pods=5, gpus=33, **{"nvidia.com/gpu": "33"}), t(pods=2, gpus=0, cpu="4")])
    assert (got["pods"], got["gpus"], got["failed"]) == (7, 33, 0)
    assert got["requests"] == {"cpu": "4", "nvidia.com/gpu": "33"}


def test_none_counts_as_failed_and_adds_nothing():
    got = sum_totals([None, t(pods=3, cpu="1"), None])
    assert got == {"pods": 3, "gpus": 0, "requests": {"cpu": "1"}, "failed": 2}
    assert sum_totals([]) == {"pods": 0, "gpus": 0, "requests": {}, "failed": 0}


def test_integer_maps_add_when_present():
    a = dict(t(cpu="500m"), accelerators={"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 2},
             requestValues={"cpu": 500, "memory": 2**30})
    b = dict(t(cpu="1.5"), accelerators={"amd.com/gpu": 4, "nvidia.com/gpu": 1},
             requestValues={"cpu": 1500, "memory": 2**29})
    got = sum_totals([a, b])
    assert got["accelerators"] == {"amd.com/gpu": 4, "nvidia.com/gpu": 9, "nvidia.com/mig-1g.10gb": 2}
    assert got["requestValues"] == {"cpu": 2000, "memory": 3 * 2**29}
    assert "accelerators" not in sum_totals([t()])  # totals without the maps: none invented


def test_int_and_quantity_map_helpers():
    assert add_int_maps({"a": 1}, {"a": 2, "b": 3}) == {"a": 3, "b": 3}
    assert to_strings(add_quantity_maps({}, {"memory": "1Gi"})) == {"memory": "1Gi"}
    big = add_int_maps({"x": 2**63 - 1}, {"x": 2**63 - 1})
    assert big == {"x": 2**64 - 2}  # Python ints: no overflow


def test_item_totals():
    assert item_totals({"error": {"status": 422}}) is None
    assert item_totals({"totals": None, "complete": False}) is None  # a partial item with unknown totals
    assert item_totals({"totals": t(pods=2)}) == t(pods=2)


def test_groups_by_value_sorted_null_last():
    items = [{"totals": t(pods=1, cpu="500m")}, {"error": {}}, {"totals": t(pods=2, cpu="1.5")},
             {"totals": t(pods=4)}, {"totals": None}]
    groups = group_totals(items, ["b", "a", "b", None, "a"])
    assert [(g["value"], g["items"]) for g in groups] == [("a", [1, 4]), ("b", [0, 2]), (None, [3])]
    a, b, none = (g["totals"] for g in groups)
    assert a == {"pods": 0, "gpus": 0, "requests": {}, "failed": 2}
    assert b == {"pods": 3, "gpus": 0, "requests": {"cpu": "2"}, "failed": 0}
    assert none["pods"] == 4
    assert group_totals([], []) == []
