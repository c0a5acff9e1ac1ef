"""Sums of interpretation totals: a batch's and a group's (api-contract "Groups").

A totals is `{pods, gpus, requests, accelerators?, requestValues?}` (api-contract `totals`).
Counts and integer maps (`accelerators`, `requestValues`) add as integers; `requests` holds
Kubernetes quantity strings, which add exactly as quantities (`500m` + `1.5` = `2`, `1Gi` +
`512Mi` = `1536Mi`), never through floats.  An integer map appears in a sum when any summed
totals holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .quantity import parse_quantity
from .requests import Requests, add, to_strings

COUNTS = ("pods", "gpus")
INT_MAPS = ("accelerators", "requestValues")


def add_int_maps(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Per-key integer sum (a key only in b is copied)."""
    out = dict(a)
    for k, n in b.items():
        out[k] = out.get(k, 0) + n
    return out


def add_quantity_maps(a: Requests, b: Mapping[str, str]) -> Requests:
    """a plus the quantity strings of b, exactly.  Raises QuantityError on a string that is
    not a quantity (an engine's totals never holds one)."""
    return add(a, {k: parse_quantity(v) for k, v in b.items()})


def sum_totals(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The sum of totals; a None part (an item that failed, or a partial one whose totals could
    not be computed) is counted in `failed` and adds nothing, since a partial count must never
    pass for the whole."""
    counts = dict.fromkeys(COUNTS, 0)
    requests: Requests = {}
    maps: dict[str, dict[str, int]] = {}
    failed = 0
    for t in parts:
        if t is None:
            failed += 1
            continue
        for k in COUNTS:
            counts[k] += int(t.get(k) or 0)
        requests = add_quantity_maps(requests, t.get("requests") or {})
        for k in INT_MAPS:
            if t.get(k) is not None:
                maps[k] = add_int_maps(maps.get(k, {}), t[k])
    out: dict[str, Any] = {**counts, "requests": to_strings(requests)}
    for k in INT_MAPS:
        if k in maps:
            out[k] = dict(sorted(maps[k].items()))
    out["failed"] = failed
    return out


def item_totals(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What an item of a batch adds: its totals, or None when it failed or they are unknown."""
    if "error" in item:
        return None
    return item.get("totals")


def group_totals(items: list[Mapping[str, Any]], values: list[str | None]) -> list[dict[str, Any]]:
    """The items grouped by their label value (`values[i]` is item i's, None without the label):
    `[{"value", "items": [indexes], "totals"}]`, ordered by value, items without the label last."""
    by_value: dict[str | None, list[int]] = {}
    for i, v in enumerate(values):
        by_value.setdefault(v, []).append(i)
    order = sorted((v for v in by_value if v is not None), key=str.encode) + ([None] if None in by_value else [])
    return [{"value": v, "items": by_value[v], "totals": sum_totals(item_totals(items[i]) for i in by_value[v])}
            for v in order]

