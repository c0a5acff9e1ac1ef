"""Capacity and fit as every interface answers them (docs/api-contract.md, "Where a workload can
run"): the service's routes, the CLI and the diagnosis give these dicts, so the shape is written
once, here. Quantities are Kubernetes strings (`"60900m"`, `"512Gi"`, `"8"`); each `*Values`
beside them holds the same figures as integers in base units (millicores, bytes, counts), as
`totals` gives `requestValues` beside `requests`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.capacity.nodes import show
from app.capacity.plan import Plan, PodGroup
from app.capacity.workload import NotFittable, pod_groups


def quantities(values: Mapping[str, int]) -> dict[str, str]:
    return {name: show(name, n) for name, n in values.items()}


def _figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Allocatable, requested, free and the largest free on one node, of one set of nodes."""
    res: Mapping[str, Mapping[str, Any]] = summary["resources"]
    values = {k: {name: r[k] for name, r in res.items()} for k in ("allocatable", "requested", "free")}
    largest = {name: r["largestFree"] for name, r in res.items() if r["largestFree"] is not None}
    out: dict[str, Any] = {}
    for k, v in values.items():
        out[k] = quantities(v)
        out[f"{k}Values"] = v
    out["largestFree"] = {name: show(name, b["amount"]) for name, b in largest.items()}
    out["largestFreeValues"] = {name: b["amount"] for name, b in largest.items()}
    out["largestFreeNodes"] = {name: b["node"] for name, b in largest.items()}
    return out


def capacity(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The `capacity` of a /clusters item, from a model's summary (`LiveModel.capacity`, whose
    figures are integers): the cluster's node counts and figures, then per node pool."""
    pools = []
    for p in summary["pools"]:
        label = f"{p['label']}={p['value']}" if p["label"] is not None else None
        pools.append(
            {"label": label, "key": p["label"], "value": p["value"], "nodes": p["nodes"]["total"]}
            | {"nodeCounts": p["nodes"]}
            | _figures(p)
        )
    return {
        "nodes": summary["nodes"],
        **_figures(summary),
        "pools": pools,
        "partial": summary.get("partial"),
        "watching": summary.get("watching"),
        "podsOnUnknownNodes": summary.get("podsOnUnknownNodes", 0),
    }


def node(row: Mapping[str, Any]) -> dict[str, Any]:
    """One item of GET /clusters/{c}/nodes from a model's node row (integer figures)."""
    out = dict(row)
    for k in ("allocatable", "requested", "free"):
        out[k] = quantities(row[k])
        out[f"{k}Values"] = row[k]
    return out


# -- fit ------------------------------------------------------------------------------------------


def group(g: PodGroup) -> dict[str, Any]:
    """A pod group as the fit shows it (`groups` of POST /fit)."""
    return {
        "name": g.name,
        "component": g.component or g.name,
        "instance": g.instance,
        "pods": g.count,
        "requests": quantities(dict(sorted(g.requests.items()))),
        "requestValues": dict(sorted(g.requests.items())),
        "gang": g.gang.name if g.gang else None,
        "topologyKey": g.gang.topology_key if g.gang else None,
    }


def verdict(cluster: str, p: Plan, groups: Sequence[PodGroup], partial: str | None = None) -> dict[str, Any]:
    """One cluster's row of POST /fit (and of `wlmap fit`): `fits`, `sets`, the `placement` of
    one copy when it fits, else the `shortfall` per component and resource; `message` is the
    sentence a person reads."""
    by_name = {g.name: g for g in groups}

    def where(name: str) -> dict[str, Any]:
        g = by_name.get(name)
        return {"component": (g.component if g else None) or name, "instance": g.instance if g else None}

    out: dict[str, Any] = {
        "cluster": cluster,
        "available": True,
        "state": "ready",
        "fits": p.fits,
        "sets": p.sets,
        "setsBounded": p.sets_bounded,
        "exact": p.exact,
        "policy": p.policy,
        "placement": [
            where(name) | {"pods": sum(k for _, k in placed), "nodes": dict(placed)}
            for name, placed in p.placement.items()
            if placed
        ],
        "shortfall": [],
        "partial": partial,
    }
    if p.fits:
        copies = "copy" if p.sets == 1 else "copies"
        least = "at least " if p.sets_bounded else ""  # the copies stopped at the plan's work bound
        out["message"] = f"fits now: {least}{p.sets} complete {copies} at once"
        return out
    for name, s in sorted(p.shortfall.items()):
        if not s.unplaced and s.placeable >= s.pods:
            continue  # this group placed: another is what does not
        # the resources that stop the pods; all of them when none does alone (no eligible node,
        # or each node short of a different one)
        rows = [r for r in s.resources if r.short] or list(s.resources)
        for r in rows:
            largest = {"node": r.node, "free": show(r.resource, r.most_free), "value": r.most_free} if r.node else None
            out["shortfall"].append(
                where(name)
                | {
                    "resource": r.resource,
                    "perPod": show(r.resource, r.per_pod),
                    "perPodValue": r.per_pod,
                    "pods": s.pods,
                    "podsUnplaced": s.unplaced or s.pods - s.placeable,
                    "largestFree": largest,
                    "reason": s.reason,
                }
            )
    short = [(name, s.reason) for name, s in sorted(p.shortfall.items()) if s.unplaced or s.placeable < s.pods]
    short = short or [(name, s.reason) for name, s in sorted(p.shortfall.items())][:1]
    one = len(p.shortfall) == 1  # one group: its sentence alone
    out["message"] = "; ".join(why if one else f"{name}: {why}" for name, why in short)
    if not p.exact:
        out["message"] += " (first-fit found no placement; not proven that none exists)"
    return out


def withheld(cluster: str, state: str, reason: str) -> dict[str, Any]:
    """A cluster's row when there is no verdict: the caller may not list its nodes
    (`forbidden`), or it has no inventory now (`starting`, `unavailable`)."""
    return {"cluster": cluster, "available": False, "state": state, "fits": None, "message": reason}


def ranked(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fitting first, then more sets, then verdicts before withheld rows, then by name."""
    return sorted(
        rows, key=lambda r: (0 if r.get("fits") else 1, -int(r.get("sets") or 0), not r["available"], r["cluster"])
    )


def best(rows: Sequence[dict[str, Any]]) -> str | None:
    """The first ranked cluster where it fits (None: it fits nowhere that was asked)."""
    return rows[0]["cluster"] if rows and rows[0].get("fits") else None


# -- the NoCapacity diagnosis -------------------------------------------------------------------


def waiting(live_answer: Mapping[str, Any]) -> tuple[list[PodGroup], list[PodGroup]] | None:
    """The pod groups of a live answer (a live interpretation with its pods), and the same groups
    less their pods already bound to a node (those hold their capacity already; groups with
    nothing left are dropped). None when nothing waits: every pod it has is bound, or a
    component failed (its pods are unknown)."""
    pods = (live_answer.get("live") or {}).get("pods") or []
    if not any(not p.get("node") and p.get("phase") in (None, "Pending") for p in pods):
        return None
    try:
        groups = pod_groups(live_answer)
    except NotFittable:
        return None
    bound = Counter((p.get("component"), p.get("instance")) for p in pods if p.get("node"))
    left = []
    for g in groups:
        n = g.count - bound[(g.component or g.name, g.instance)]
        if n > 0:
            left.append(dataclasses.replace(g, count=n))
    return (groups, left) if left else None


def no_capacity(here: Mapping[str, Any], waiting: Sequence[PodGroup], fits_in: Iterable[str]) -> dict[str, Any]:
    """The `NoCapacity` diagnosis entry of pods that wait, from their cluster's verdict `here`
    (fits false) and the other clusters where the whole workload fits now."""
    components = {s["component"] for s in here["shortfall"]}
    return {
        "severity": "error",
        "reason": "NoCapacity",
        "message": f"fits nowhere in this cluster now: {here['message']}",
        "component": components.pop() if len(components) == 1 else None,
        "pods": sum(g.count for g in waiting),
        "since": None,
        "fitsIn": sorted(fits_in),
    }
