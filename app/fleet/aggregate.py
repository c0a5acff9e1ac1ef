"""One status for the same workload in several clusters: GET /fleet/workloads/{namespace}/{name}
and `wlmap describe --all-contexts` build their answer here from each cluster's live answer.

The phase follows a fixed precedence over the clusters' phases (the table of
docs/api-contract.md, "Fleet aggregate"); totals are summed as a batch sums them (`add_totals`:
one unknown total makes the sum unknown); each cluster keeps a part with its own phase, ready
counts and totals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..engine.totals import add_totals

UNDEFINED = "Undefined"
SETTLED_WHILE_SUSPENDED = {"Suspended", "Suspending", "Completed"}
WHO = ("apiVersion", "kind", "namespace", "name")  # what names the workload in every cluster


def aggregate_phase(phases: Sequence[str | None]) -> str:
    """One phase for the clusters' phases (None: a cluster whose status could not be read, counted
    as Undefined).  The rules, first match wins:

    1. any Failed -> Failed
    2. any Degraded -> Degraded
    3. all Completed -> Completed
    4. all Suspended, Suspending or Completed -> Suspending if any is Suspending, else Suspended
    5. any Resuming -> Resuming
    6. any Initializing -> Initializing
    7. any Running -> Running (the rest Completed, Suspended, Suspending or Undefined)
    8. otherwise (none, or Undefined with Completed or Suspended parts) -> Undefined
    """
    seen = [p or UNDEFINED for p in phases]
    if not seen:
        return UNDEFINED
    present = set(seen)
    for decisive in ("Failed", "Degraded"):
        if decisive in present:
            return decisive
    if present == {"Completed"}:
        return "Completed"
    if present <= SETTLED_WHILE_SUSPENDED:  # not all Completed: some part is (being) suspended
        return "Suspending" if "Suspending" in present else "Suspended"
    for moving in ("Resuming", "Initializing", "Running"):
        if moving in present:
            return moving
    return UNDEFINED


class MixedKinds(Exception):
    """The name is a different kind in different clusters: not one workload (the caller must name one)."""

    def __init__(self, candidates: list[dict[str, Any]]):
        kinds = sorted({f"{c['kind']} ({c['apiVersion']})" for c in candidates})
        super().__init__(
            f'"{candidates[0]["name"]}" in namespace {candidates[0]["namespace"]} is a different kind in '
            f"different clusters ({', '.join(kinds)})"
        )
        self.candidates = candidates


def _group_kind(workload: dict[str, Any]) -> tuple[str, str]:
    return str(workload.get("apiVersion") or "").rpartition("/")[0], str(workload.get("kind") or "")


def part(cluster: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One cluster's part: its phase (null when its status could not be read), its pods ready and
    desired (ready null when the caller may not list pods there), its totals and uid."""
    status, live = answer.get("status"), answer.get("live")
    totals = answer.get("totals")
    desired = live.get("desired") if live is not None else (totals or {}).get("pods")
    return {
        "cluster": cluster,
        "phase": status.get("phase") if status else None,
        "live": {"ready": live.get("ready") if live is not None else None, "desired": desired},
        "totals": totals,
        "uid": (answer.get("workload") or {}).get("uid"),
    }


def aggregate(answers: Iterable[tuple[str, dict[str, Any]]], warnings: Sequence[str] = ()) -> dict[str, Any]:
    """The aggregate of live answers by cluster (at least one; in the order given).  Raises
    MixedKinds when they are not all the same kind (group and Kind; versions may differ)."""
    pairs = list(answers)
    kinds = {_group_kind(a["workload"]) for _, a in pairs}
    if len(kinds) > 1:
        raise MixedKinds([{"cluster": c, **{k: a["workload"].get(k) for k in WHO}} for c, a in pairs])
    parts = [part(c, a) for c, a in pairs]
    totals: dict[str, Any] | None = parts[0]["totals"]
    for p in parts[1:]:
        totals = add_totals(totals, p["totals"])
    first = pairs[0][1]["workload"]
    return {
        "workload": {**{k: first.get(k) for k in WHO}, "uid": None},  # each cluster's uid is in its part
        "status": {"phase": aggregate_phase([p["phase"] for p in parts])},
        "totals": totals,
        "clusters": parts,
        "warnings": sorted(set(warnings)),
    }
