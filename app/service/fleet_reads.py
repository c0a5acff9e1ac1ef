"""Reads over several clusters: the aggregate list, one workload found by name in the fleet, and
one workload's aggregated status across the fleet.

Each cluster is read on its own (from its model, else directly while it answers), at the same
time as the others and within a bound, so a cluster that is down or slow costs a warning, not
the answer: its rows are kept as last seen and marked `unavailable`, or left out with a warning
when there is nothing to show or the caller's rights there cannot be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from ..cluster.kube import PODS
from ..cluster.reader import Allow, LookupFailed, WorkloadReader
from ..cluster.views import sort_rows
from ..fleet.aggregate import MixedKinds, aggregate
from ..fleet.member import Member
from ..model.protocol import NotSynced
from .errors import SAID_ERRORS, problem_of
from .problems import ProblemError

READ_BOUND = 5.0  # seconds one cluster may take for its part of an aggregate read

AllowFor = Callable[[Member], Allow]
# Where a read of the cluster is answered from (its live model, else the API server; a
# ProblemError when neither can): the service's one decision for every read (Service.reader).
ReaderFor = Callable[[Member], WorkloadReader]
UNSEARCHED: tuple[type[Exception], ...] = (asyncio.TimeoutError, *SAID_ERRORS)  # a cluster that could not be searched


def unavailable(member: Member) -> ProblemError:
    why = f": {member.last_error}" if member.last_error else ""
    return ProblemError(
        503,
        "cluster-unavailable",
        "Cluster unavailable",
        f"cluster {member.name} does not answer{why}",
        headers={"Retry-After": "5"},
    )


def not_synced(member: Member) -> NotSynced:
    return NotSynced(f"cluster {member.name} is connecting; its live model has not finished its first sync")


def _labelled(rows: list[dict[str, Any]], member: Member) -> list[dict[str, Any]]:
    """Rows read directly carry no cluster yet (the model's do)."""
    return [r if r.get("cluster") == member.name else {"cluster": member.name, **r} for r in rows]


async def member_summaries(
    member: Member, namespace: str | None, kind: str | None, allow: Allow, reader_for: ReaderFor
) -> dict[str, Any]:
    """One cluster's part of GET /workloads (raises an error when it has nothing to give)."""
    out = await reader_for(member).summaries(namespace, kind, allow=allow)
    rows = _labelled(out["items"], member)
    if not member.available:
        rows = [dict(r, unavailable=True) for r in rows]
    return {**out, "items": rows}


async def fleet_summaries(
    members: list[Member], namespace: str | None, kind: str | None, allow_for: AllowFor, reader_for: ReaderFor
) -> dict[str, Any]:
    async def one(m: Member) -> dict[str, Any] | ProblemError:
        try:
            return await asyncio.wait_for(member_summaries(m, namespace, kind, allow_for(m), reader_for), READ_BOUND)
        except TimeoutError:
            return ProblemError(
                503, "cluster-slow", "Cluster too slow", f"cluster {m.name} did not answer within {READ_BOUND:g} s"
            )
        except SAID_ERRORS as e:
            return problem_of(e)

    parts = await asyncio.gather(*(one(m) for m in members))
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    clusters: list[dict[str, Any]] = []
    for m, part in zip(members, parts, strict=False):
        if isinstance(part, ProblemError):
            warnings.append(f"cluster {m.name}: {part.detail}; its workloads are left out")
            clusters.append({"name": m.name, "available": m.available, "synced": m.synced, "freshness": None})
            continue
        rows += part["items"]
        warnings += [f"cluster {m.name}: {w}" for w in part.get("warnings") or []]
        if not m.available:
            warnings.append(
                f"cluster {m.name} does not answer"
                + (f" ({m.last_error})" if m.last_error else "")
                + "; its workloads are shown as last seen"
            )
        clusters.append(
            {"name": m.name, "available": m.available, "synced": m.synced, "freshness": part.get("freshness")}
        )
    sort_rows(rows)
    rows.sort(key=lambda r: str(r.get("cluster") or ""))  # stable: by cluster, then the usual order
    fresh = [c["freshness"] for c in clusters if c["freshness"]]
    freshness = None
    if fresh:
        freshness = {
            "source": "model" if all(f["source"] == "model" for f in fresh) else "direct",
            "resourceVersion": None,
            "observedAt": min(f["observedAt"] for f in fresh),
            "watching": all(f["watching"] for f in fresh),
        }
    return {"items": rows, "warnings": sorted(set(warnings)), "freshness": freshness, "clusters": clusters}


async def find_in_fleet(
    members: list[Member],
    namespace: str,
    name: str,
    kind: str | None,
    api_version: str | None,
    allow_for: AllowFor,
    reader_for: ReaderFor,
) -> Member:
    """The one cluster holding the workload the caller may see (409 naming the candidates, each
    with its cluster, when several do).  Each cluster is searched with the caller's rights there
    (the reader's rules), so a cluster where they may not look is never a candidate."""
    down: list[Member] = []
    refused: list[LookupFailed] = []

    async def holds(m: Member) -> dict[str, Any] | None:
        try:
            found = await reader_for(m).locate(namespace, name, kind, api_version, allow=allow_for(m))
        except LookupFailed as e:  # ambiguous there: that cluster answers (with its 409)
            if e.status == 409:
                return {
                    "cluster": m.name,
                    "apiVersion": api_version or "",
                    "kind": kind or "",
                    "namespace": namespace,
                    "name": name,
                }
            if e.status == 403:
                refused.append(e)
            elif e.status != 404:
                down.append(m)
            return None
        return {
            "cluster": m.name,
            "apiVersion": found.resource.api_version,
            "kind": found.resource.kind,
            "namespace": namespace,
            "name": name,
        }

    async def bounded(m: Member) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(holds(m), READ_BOUND)
        except UNSEARCHED:
            down.append(m)
            return None

    found = [(m, c) for m, c in zip(members, await asyncio.gather(*(bounded(m) for m in members)), strict=False) if c]
    if len(found) == 1:
        return found[0][0]
    if len(found) > 1:
        raise ProblemError(
            409,
            "ambiguous-workload",
            "Ambiguous workload",
            f'workloads named "{name}" in namespace {namespace} are in {len(found)} clusters: '
            + ", ".join(m.name for m, _ in found)
            + "; name the cluster (?cluster= or "
            "/clusters/{cluster}/workloads/...)",
            extra={"candidates": [c for _, c in found]},
        )
    raise nowhere(members, refused, [m.name for m in down], namespace, name)


def nowhere(
    members: list[Member], refused: list[LookupFailed], unsearched: list[str], namespace: str, name: str
) -> ProblemError:
    """No cluster the caller may read holds the workload: 403 when they may look nowhere (the same
    for what exists and what does not), else 404 naming the clusters that could not be searched."""
    if refused and len(refused) == len(members):  # nowhere to look: as a single cluster says it
        return ProblemError(
            403, "forbidden", "Forbidden", refused[0].message + (" (in every cluster)" if len(members) > 1 else "")
        )
    note = ("; clusters " + ", ".join(sorted(unsearched)) + " could not be searched") if unsearched else ""
    return ProblemError(
        404,
        "workload-not-found",
        "Workload not found",
        f'no workload named "{name}" in namespace {namespace} in any cluster{note}',
    )


async def fleet_aggregate(
    members: list[Member],
    namespace: str,
    name: str,
    kind: str | None,
    api_version: str | None,
    allow_for: AllowFor,
    reader_for: ReaderFor,
) -> dict[str, Any]:
    """GET /fleet/workloads/{namespace}/{name}: the workload's live answer in every cluster that
    holds it where the caller may read it, aggregated (app/fleet/aggregate.py).  A cluster where
    the caller may not read it is left out silently, as in every fleet read (403 only when that
    is every cluster); one that cannot be searched is a warning; a name that is two kinds in one
    cluster is that cluster's 409, and different kinds in different clusters a 409 too."""
    refused: list[LookupFailed] = []
    ambiguous: list[ProblemError] = []
    down: dict[str, str] = {}  # cluster -> why it could not be searched

    async def read(m: Member) -> dict[str, Any] | None:
        allow = allow_for(m)
        # ready counts need the pods; without `list pods` there, the part says ready: null
        pods = await allow("list", PODS, namespace, None)
        try:
            body = await reader_for(m).describe(namespace, name, kind, api_version, with_pods=pods, allow=allow)
        except LookupFailed as e:
            if e.status == 409:
                candidates = [{"cluster": m.name, **c} for c in e.candidates]
                extra = {"candidates": candidates} if candidates else None
                ambiguous.append(
                    ProblemError(
                        409, "ambiguous-workload", "Ambiguous workload", f"cluster {m.name}: {e.message}", extra=extra
                    )
                )
            elif e.status == 403:
                refused.append(e)
            elif e.status != 404:
                down[m.name] = e.message
            return None
        answer: dict[str, Any] = orjson.loads(body)
        return answer

    async def bounded(m: Member) -> dict[str, Any] | None:
        try:
            return await asyncio.wait_for(read(m), READ_BOUND)
        except UNSEARCHED as e:
            why = f"did not answer within {READ_BOUND:g} s" if isinstance(e, TimeoutError) else problem_of(e).detail
            down[m.name] = why
            return None

    got = await asyncio.gather(*(bounded(m) for m in members))
    if ambiguous:
        raise ambiguous[0]
    found = [(m.name, a) for m, a in zip(members, got, strict=False) if a is not None]
    if found:
        try:
            return aggregate(found, [f"cluster {n}: {why}; it is left out" for n, why in down.items()])
        except MixedKinds as e:
            raise ProblemError(
                409,
                "ambiguous-workload",
                "Ambiguous workload",
                f"{e}: name one with ?kind= (and apiVersion=)",
                extra={"candidates": e.candidates},
            ) from None
    raise nowhere(members, refused, list(down), namespace, name)
