"""POST /fit: where a workload can run now, per cluster the caller may see.

The body is what POST /interpret takes (a manifest, or an envelope with `object` or `ref`, and
an inline `definition`), plus `policy` ("binpack" | "spread") and `clusters` (names; every
cluster of the fleet without it). The workload is interpreted the way /interpret does it
(`Service.interpret_request`: a `ref` is read with the caller's rights), its interpretation
turned into pod groups (`app.capacity.workload.pod_groups`), and each cluster's nodes and free
amounts, from its live model's inventory (memory, no API request), given to `plan`.

A cluster's figures, and so its plan (which names nodes), are given only to a caller who may
`list nodes` there (the check of `capacity` on /clusters); the others are listed with
`state: forbidden` and no figure. A cluster without an inventory (`--cache false`, starting,
the service may not list nodes) is listed with its state and why. Clusters are ranked: fitting
first, then more `sets`, then by name; `best` names the first that fits (null: none does).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..capacity.nodes import show
from ..capacity.plan import Plan, PodGroup, plan
from ..capacity.workload import NotFittable, pod_groups
from ..fleet.member import Member
from ..model.capacity import CapacityUnavailable
from . import capacity
from .fleet_reads import READ_BOUND
from .models import FitRequest, InterpretRequest
from .problems import ProblemError, envelope
from .service import Service, _is_manifest


def request_of(doc: Any) -> FitRequest:
    """The fit request of a decoded body: a manifest, or an envelope (422 naming what is wrong)."""
    if _is_manifest(doc):
        return FitRequest(object=doc)
    out: FitRequest = envelope(
        FitRequest, doc, 'expected a manifest or an object {"object" | "ref", "definition"?, "policy"?, "clusters"?}'
    )
    return out


def _group_row(g: PodGroup) -> dict[str, Any]:
    return {
        "name": g.name,
        "pods": g.count,
        "requestValues": dict(sorted(g.requests.items())),
        "gang": g.gang.name if g.gang else None,
        "topologyKey": g.gang.topology_key if g.gang else None,
    }


def _answer(name: str, p: Plan, partial: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cluster": name,
        "available": True,
        "state": "ready",
        "fits": p.fits,
        "sets": p.sets,
        "exact": p.exact,
        "placement": {g: [{"node": n, "pods": k} for n, k in placed] for g, placed in p.placement.items()},
        "partial": partial,
    }
    if p.fits:
        copies = "copy" if p.sets == 1 else "copies"
        out["reason"] = f"fits now: {p.sets} complete {copies} at once ({p.policy})"
        return out
    out["shortfall"] = {
        g: {
            "pods": s.pods,
            "placeable": s.placeable,
            "resources": [
                {
                    "resource": r.resource,
                    "perPod": r.per_pod,
                    "perPodQuantity": show(r.resource, r.per_pod),
                    "mostFree": r.most_free,
                    "mostFreeQuantity": show(r.resource, r.most_free),
                    "node": r.node,
                }
                for r in s.resources
            ],
            "reason": s.reason,
        }
        for g, s in p.shortfall.items()
    }
    out["reason"] = "does not fit now: " + "; ".join(f"{g}: {s.reason}" for g, s in sorted(p.shortfall.items()))
    if not p.exact:
        out["reason"] += " (first-fit verdict, not proven)"
    return out


def _withheld(name: str, state: str, reason: str) -> dict[str, Any]:
    return {"cluster": name, "available": False, "state": state, "reason": reason}


async def _one(
    service: Service, member: Member, groups: list[PodGroup], policy: str, state: dict[str, Any]
) -> dict[str, Any]:
    name = member.name
    try:
        allowed = await asyncio.wait_for(capacity.may_list_nodes(service.auth.rights(state, member)), READ_BOUND)
    except ProblemError as e:
        return _withheld(name, "unavailable", e.detail)
    except TimeoutError:
        return _withheld(name, "unavailable", f"the caller's rights could not be checked within {READ_BOUND:g} s")
    if not allowed:
        return _withheld(name, "forbidden", capacity.MAY_NOT_LIST)
    try:
        model = capacity.live_model(member)
    except CapacityUnavailable as e:
        return _withheld(name, "unavailable", str(e))
    ready, why = model.capacity_state()
    if ready != "ready":
        return _withheld(name, ready, why or ready)
    nodes, free = model.capacity_snapshot()  # taken on the event loop
    p = await asyncio.to_thread(plan, groups, nodes, free, policy=policy)
    return _answer(name, p, model.capacity_partial())


def _rank(row: dict[str, Any]) -> tuple[int, int, str]:
    return (0 if row.get("fits") else 1, -int(row.get("sets") or 0), row["cluster"])


async def fit(service: Service, doc: Any, state: dict[str, Any]) -> dict[str, Any]:
    """The answer of POST /fit for one decoded body (see the module docstring)."""
    req = request_of(doc)
    cluster = service.need_cluster("fit")
    names = list(dict.fromkeys(n.strip() for n in req.clusters or () if n.strip()))
    for n in names:
        if cluster.fleet.get(n) is None:
            raise ProblemError(
                404, "cluster-not-found", "Cluster not found", f"no cluster named {n!r} (GET /clusters lists them)"
            )
    env = InterpretRequest(object=req.object, ref=req.ref, definition=req.definition)
    interpretation = await service.interpret_request(env, state)
    try:
        groups = pod_groups(interpretation)
    except NotFittable as e:
        raise ProblemError(422, "not-fittable", "Cannot fit", str(e)) from None
    service.need_store()
    members = [cluster.fleet.members[n] for n in names] if names else list(cluster.fleet.members.values())
    rows = await asyncio.gather(*(_one(service, m, groups, req.policy, state) for m in members))
    rows = sorted(rows, key=_rank)
    best = rows[0]["cluster"] if rows and rows[0].get("fits") else None
    return {
        "workload": interpretation.get("workload"),
        "totals": interpretation.get("totals"),
        "policy": req.policy,
        "groups": [_group_row(g) for g in groups],
        "clusters": rows,
        "best": best,
    }
