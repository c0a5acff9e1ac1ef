"""Sums of interpretation totals (app/engine/batch_totals.py): a batch's and a group's, exact."""

from __future__ import annotations

from app.engine.batch_totals import group_totals, item_totals, sum_totals


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
    assert got == {"pods": 3, "gpus": 0, "accelerators": {}, "requests": {"cpu": "1"},
                   "requestValues": {"cpu": 1000}, "failed": 2}
    assert sum_totals([]) == {"pods": 0, "gpus": 0, "accelerators": {}, "requests": {}, "requestValues": {},
                              "failed": 0}


def test_accelerators_add_and_request_values_come_from_the_exact_sum():
    a = dict(t(cpu="500m", memory="1Gi"), accelerators={"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 2})
    b = dict(t(cpu="1.5", memory="512Mi"), accelerators={"amd.com/gpu": 4, "nvidia.com/gpu": 1})
    got = sum_totals([a, b])
    assert got["accelerators"] == {"amd.com/gpu": 4, "nvidia.com/gpu": 9, "nvidia.com/mig-1g.10gb": 2}
    assert got["requestValues"] == {"cpu": 2000, "memory": 3 * 2**29}
    # rounded once, from the exact sum: two half-millicores are one millicore, not two
    assert sum_totals([t(cpu="500u"), t(cpu="500u")])["requestValues"] == {"cpu": 1}


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
    assert (a["pods"], a["requests"], a["failed"]) == (0, {}, 2)
    assert (b["pods"], b["requests"], b["requestValues"], b["failed"]) == (3, {"cpu": "2"}, {"cpu": 2000}, 0)
    assert none["pods"] == 4
    assert group_totals([], []) == []
