"""`POST /divide`: one rewritten copy of a workload per cluster, its counts split by weight
(app/engine/divide.py).

The object comes as `POST /interpret/update` takes it (sent, or read by `ref` with the caller's
rights, whole, from the API server).  The weights are the request's, or with `by: capacity` the
copies of one pod of each of the workload's pod groups that fit in each cluster now (the fit's
plan, app/service/fit.py, on a workload scaled to one pod per group with no gang, so that a
workload too large for every cluster still gets weights): only where the caller may `list
nodes`; a cluster whose figures are withheld or not ready weighs 0, and when every cluster weighs
0 the answer is a 409 naming why.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ..capacity.workload import NotFittable, pod_groups
from ..engine.divide import DivideError, divide
from ..engine.update import UpdateError
from . import fit
from .models import DivideRequest
from .problems import ProblemError, envelope
from .service import Read, Service
from .updates import not_read_back


def _weights_given(req: DivideRequest) -> list[tuple[str, int]]:
    clusters = req.clusters or []
    if not clusters:
        raise ProblemError(
            422, "invalid-request", "Invalid request", 'give "clusters" with weights, or "by": "capacity"'
        )
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        raise ProblemError(422, "invalid-request", "Invalid request", "clusters: a name is given twice")
    missing = [c.name for c in clusters if c.weight is None]
    if missing:
        raise ProblemError(
            422,
            "invalid-request",
            "Invalid request",
            f'clusters: {missing[0]} has no weight (or give "by": "capacity")',
        )
    out = [(c.name, c.weight or 0) for c in clusters]
    if not any(w for _, w in out):
        raise ProblemError(422, "invalid-request", "Invalid request", "clusters: every weight is 0")
    return out


async def _weights_by_capacity(
    service: Service, req: DivideRequest, interpretation: dict[str, Any], state: dict[str, Any]
) -> list[tuple[str, int]]:
    cluster = service.need_cluster("divisions by capacity")
    names = [c.name for c in req.clusters or []]
    for n in names:
        if cluster.fleet.get(n) is None:
            raise ProblemError(
                404, "cluster-not-found", "Cluster not found", f"no cluster named {n!r} (GET /clusters lists them)"
            )
    try:
        unit = [dataclasses.replace(g, count=1, gang=None) for g in pod_groups(interpretation)]
    except NotFittable as e:
        raise ProblemError(422, "not-fittable", "Cannot fit", str(e)) from None
    service.need_store()
    members = [cluster.fleet.members[n] for n in names] if names else list(cluster.fleet.members.values())
    rows = await asyncio.gather(*(fit.in_cluster(service, m, unit, fit.options(None, None)[0], state) for m in members))
    out = [(r["cluster"], int(r.get("sets") or 0) if r.get("available") else 0) for r in rows]
    if not any(w for _, w in out):
        why = "; ".join(f"{r['cluster']}: {r.get('message')}" for r in rows)
        raise ProblemError(
            409, "fits-nowhere", "Fits nowhere", f"not one pod of the workload fits now in any cluster ({why})"
        )
    return out


async def divide_doc(service: Service, doc: Any, state: dict[str, Any]) -> dict[str, Any]:
    req: DivideRequest = envelope(
        DivideRequest, doc, 'expected an object {"object" | "ref", "definition"?, "clusters" | "by"}'
    )
    weights = None if req.by == "capacity" else _weights_given(req)
    obj, d = await service.subject(req, state, Read(), whole=True)
    before = await service.evaluate(d, obj, None)
    if weights is None:
        weights = await _weights_by_capacity(service, req, before, state)
    try:
        out = await divide(d, obj, before, weights, lambda o: service.evaluate(d, o, None))
    except UpdateError as e:
        raise ProblemError(422, "divide-refused", "Divide refused", e.message, [e.as_error()]) from None
    except DivideError as e:
        raise not_read_back(e.moved) from None
    return {"workload": before.get("workload"), "weights": dict(weights), **out}
