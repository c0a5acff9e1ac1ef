"""What `wlmap get` does to the rows once read: keep the named ones, the phases and labels asked
for, sort them (`--sort-by`), and the wide columns.  Pure: rows in, rows out (the rows carry
`labels` and `components` themselves: cluster/workloads.summary_row)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..cluster.selectors import Selector

# --sort-by KEY / -KEY.  `age` is the time since creation: `age` youngest first, `-age` oldest first.
SORT_KEYS = ("name", "namespace", "kind", "phase", "gpus", "ready", "age", "cluster")
SORT_CHOICES = [p + k for k in SORT_KEYS for p in ("", "-")]


def phases(values: Iterable[str] | None) -> set[str]:
    """--phase Running --phase Failed,Pending -> {"running", "failed", "pending"} (case-insensitive)."""
    return {p.strip().lower() for v in values or [] for p in v.split(",") if p.strip()}


def components_cell(row: dict[str, Any]) -> str:
    """`master(1), worker(4)`."""
    return ", ".join(f"{c['name']}({'?' if c.get('pods') is None else c['pods']})" for c in row.get("components") or [])


def select(
    items: list[dict[str, Any]], names: list[str] | None, phase: set[str], selector: Selector | None
) -> list[dict[str, Any]]:
    out = []
    for i in items:
        if names and i["workload"]["name"] not in names:
            continue
        if phase and (i.get("phase") or "").lower() not in phase:
            continue
        if selector is not None and not selector.matches(i.get("labels")):
            continue
        out.append(i)
    return out


def _key(row: dict[str, Any], key: str) -> Any:
    w = row["workload"]
    if key in ("name", "namespace", "kind"):
        return w.get(key) or ""
    if key == "phase":
        return row.get("phase")
    if key == "gpus":
        return row.get("gpus")
    if key == "ready":
        return (row.get("pods") or {}).get("ready")
    if key == "age":  # older first when ascending by creation time: age ascending is the reverse
        return row.get("createdAt")
    return row.get("cluster") or ""


def sort(items: list[dict[str, Any]], spec: str) -> list[dict[str, Any]]:
    """Stable: rows equal on the key keep their order.  Rows without a value come last either way."""
    desc, key = spec.startswith("-"), spec.lstrip("-")
    if key == "age":  # age grows as createdAt shrinks
        desc = not desc
    known = [i for i in items if _key(i, key) is not None]
    unknown = [i for i in items if _key(i, key) is None]
    return sorted(known, key=lambda i: _key(i, key), reverse=desc) + unknown
