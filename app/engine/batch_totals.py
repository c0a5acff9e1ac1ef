"""Sums of interpretation totals: a batch's and a group's (docs/api-contract.md, "Groups").

A totals is `{pods, gpus, accelerators, requests, requestValues}` (docs/api-contract.md `totals`); they
add as totals.Sums do: counts as integers, `requests` exactly as quantities (`500m` + `1.5` =
`2`, `1Gi` + `512Mi` = `1536Mi`, never through floats), `requestValues` from the exact sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .totals import ZERO, sums_of


def sum_totals(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The sum of totals (totals.Sums: exact quantities, `requestValues` from the exact sum); a
    None part (an item that failed, or a partial one whose totals could not be computed) is
    counted in `failed` and adds nothing, since a partial count must never pass for the whole."""
    total, failed = ZERO, 0
    for t in parts:
        if t is None:
            failed += 1
        else:
            total = total + sums_of(t)
    return {**total.as_json(), "failed": failed}


def item_totals(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What an item of a batch adds: its totals, or None when it failed or they are unknown."""
    if "error" in item:
        return None
    return item.get("totals")


def group_totals(items: Sequence[Mapping[str, Any]], values: list[str | None]) -> list[dict[str, Any]]:
    """The items grouped by their label value (`values[i]` is item i's, None without the label):
    `[{"value", "items": [indexes], "totals"}]`, ordered by value, items without the label last."""
    by_value: dict[str | None, list[int]] = {}
    for i, v in enumerate(values):
        by_value.setdefault(v, []).append(i)
    order = sorted((v for v in by_value if v is not None), key=str.encode) + ([None] if None in by_value else [])
    return [
        {"value": v, "items": by_value[v], "totals": sum_totals(item_totals(items[i]) for i in by_value[v])}
        for v in order
    ]
