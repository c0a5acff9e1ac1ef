"""Reads over several clusters: the aggregate list, and one workload found by name in the fleet.

Each cluster is read on its own (from its model, else directly while it answers), at the same
time as the others and within a bound, so a cluster that is down or slow costs a warning, not
the answer: its rows are kept as last seen and marked `unavailable`, or left out with a warning
when there is nothing to show or the caller's rights there cannot be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..cluster.workloads import Allow, LookupFailed, sort_rows
from ..fleet.member import Member
from ..model.live import LiveModel
from .problems import ProblemError

READ_BOUND = 5.0  # seconds one cluster may take for its part of an aggregate read

AllowFor = Callable[[Member], Allow]
# The cluster's live model when it can answer this read from memory, else None (read directly):
# the service's one decision for every read (Service.model).
ModelFor = Callable[[Member], "LiveModel | None"]


def unavailable(member: Member) -> ProblemError:
    why = f": {member.last_error}" if member.last_error else ""
    return ProblemError(503, "cluster-unavailable", "Cluster unavailable",
                        f"cluster {member.name} does not answer{why}", headers={"Retry-After": "5"})


def not_synced(member: Member) -> ProblemError:
    return ProblemError(503, "cluster-not-synced", "Cluster not synced yet",
                        f"cluster {member.name} is connecting; its live model has not finished its first sync",
                        headers={"Retry-After": "2"})


def _labelled(rows: list[dict[str, Any]], member: Member) -> list[dict[str, Any]]:
    """Rows read directly carry no cluster yet (the model's do)."""
    return [r if r.get("cluster") == member.name else {"cluster": member.name, **r} for r in rows]


async def member_summaries(member: Member, namespace: str | None, kind: str | None, allow: Allow,
                           model: LiveModel | None) -> dict[str, Any]:
    """One cluster's part of GET /workloads (raises ProblemError when it has nothing to give)."""
    if model is not None:
        out = await model.summaries(namespace, kind, allow=allow)
    elif member.available and member.workloads is not None:
        out = await member.workloads.summaries(namespace, kind, allow=allow)
    else:
        raise unavailable(member) if not member.available else not_synced(member)
    rows = _labelled(out["items"], member)
    if not member.available:
        rows = [dict(r, unavailable=True) for r in rows]
    return {**out, "items": rows}


async def fleet_summaries(members: list[Member], namespace: str | None, kind: str | None, allow_for: AllowFor,
                          model_for: ModelFor) -> dict[str, Any]:
    async def one(m: Member) -> dict[str, Any] | Exception:
        try:
            return await asyncio.wait_for(member_summaries(m, namespace, kind, allow_for(m), model_for(m)),
                                          READ_BOUND)
        except asyncio.TimeoutError:
            return ProblemError(503, "cluster-slow", "Cluster too slow",
                                f"cluster {m.name} did not answer within {READ_BOUND:g} s")
        except (ProblemError, LookupFailed) as e:
            return e

    parts = await asyncio.gather(*(one(m) for m in members))
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    clusters: list[dict[str, Any]] = []
    for m, part in zip(members, parts):
        if isinstance(part, Exception):
            detail = part.detail if isinstance(part, ProblemError) else part.message  # type: ignore[attr-defined]
            warnings.append(f"cluster {m.name}: {detail}; its workloads are left out")
            clusters.append({"name": m.name, "available": m.available, "synced": m.synced, "freshness": None})
            continue
        rows += part["items"]
        warnings += [f"cluster {m.name}: {w}" for w in part.get("warnings") or []]
        if not m.available:
            warnings.append(f"cluster {m.name} does not answer"
                            + (f" ({m.last_error})" if m.last_error else "")
                            + "; its workloads are shown as last seen")
        clusters.append({"name": m.name, "available": m.available, "synced": m.synced,
                         "freshness": part.get("freshness")})
    sort_rows(rows)
    rows.sort(key=lambda r: str(r.get("cluster") or ""))  # stable: by cluster, then the usual order
    fresh = [c["freshness"] for c in clusters if c["freshness"]]
    freshness = None
    if fresh:
        freshness = {"source": "model" if all(f["source"] == "model" for f in fresh) else "direct",
                     "resourceVersion": None, "observedAt": min(f["observedAt"] for f in fresh),
                     "watching": all(f["watching"] for f in fresh)}
    return {"items": rows, "warnings": sorted(set(warnings)), "freshness": freshness, "clusters": clusters}


async def find_in_fleet(members: list[Member], namespace: str, name: str, kind: str | None,
                        api_version: str | None, allow_for: AllowFor,
                        model_for: ModelFor) -> Member:
    """The one cluster holding the workload the caller may see (409 naming the candidates, each
    with its cluster, when several do)."""
    down: list[Member] = []

    def ref(m: Member, api: str, k: str) -> dict[str, Any]:
        return {"cluster": m.name, "apiVersion": api, "kind": k, "namespace": namespace, "name": name}

    async def holds(m: Member) -> dict[str, Any] | None:
        model = model_for(m)
        if model is not None:
            try:
                kw, obj = model.resolve(namespace, name, kind, api_version)
            except LookupFailed as e:  # ambiguous there: that cluster answers (with its 409)
                return ref(m, api_version or "", kind or "") if e.status == 409 else None
            res = kw.resource
            if not await allow_for(m)("get", res, namespace if res.namespaced else None, name):
                return None
            return ref(m, res.api_version, res.kind)
        if not m.available or m.workloads is None:
            down.append(m)
            return None
        try:
            _, obj = await m.workloads.find(namespace, name, kind, api_version, allow_for(m))
        except LookupFailed as e:
            return ref(m, api_version or "", kind or "") if e.status not in (404, 403) else None
        return ref(m, str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))

    async def bounded(m: Member) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(holds(m), READ_BOUND)
        except (asyncio.TimeoutError, ProblemError):
            down.append(m)
            return None

    found = [(m, c) for m, c in zip(members, await asyncio.gather(*(bounded(m) for m in members))) if c]
    if len(found) == 1:
        return found[0][0]
    if len(found) > 1:
        raise ProblemError(409, "ambiguous-workload", "Ambiguous workload",
                           f'workloads named "{name}" in namespace {namespace} are in {len(found)} clusters: '
                           + ", ".join(m.name for m, _ in found) + "; name the cluster (?cluster= or "
                                                                   "/clusters/{cluster}/workloads/...)",
                           extra={"candidates": [c for _, c in found]})
    note = ("; clusters " + ", ".join(sorted(m.name for m in down)) + " could not be searched") if down else ""
    raise ProblemError(404, "workload-not-found", "Workload not found",
                       f'no workload named "{name}" in namespace {namespace} in any cluster{note}')


def with_cluster(result: dict[str, Any], member: Member) -> dict[str, Any]:
    """A direct read's interpretation, naming its cluster first (the model's already does)."""
    return {"cluster": member.name, **result}
