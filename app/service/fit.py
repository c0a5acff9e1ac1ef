"""POST /fit: where a workload can run now, per cluster the caller may see.

The body is what POST /interpret takes (a manifest, or an envelope with `object` or `ref`, and
an inline `definition`); the query gives `policy` ("pack" | "spread") and `clusters` (names,
comma-separated; every cluster of the fleet without it). The workload is interpreted the way
/interpret does it (`Service.interpret_request`: a `ref` is read with the caller's rights), its
interpretation turned into pod groups (`app.capacity.workload.pod_groups`), and each cluster's
nodes and free amounts, from its model's inventory (memory, no API request), given to `plan`;
`app.capacity.answers` writes each cluster's row.

A cluster's figures, and so its plan (which names nodes), are given only to a caller who may
`list nodes` there (the check of `capacity` on /clusters); the others are listed with
`state: forbidden` and no figure. A cluster without an inventory (starting, the service may not
list nodes) is listed with its state and why. Clusters are ranked: fitting first, then more
`sets`, then by name; `best` names the first that fits (null: none does).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..capacity import answers
from ..capacity.plan import POLICIES, PodGroup, plan
from ..capacity.workload import NotFittable, pod_groups
from ..fleet.member import Member
from . import capacity
from .models import FitRequest, InterpretRequest
from .problems import ProblemError, envelope
from .service import Service, _is_manifest


def request_of(doc: Any) -> FitRequest:
    """The fit request of a decoded body: a manifest, or an envelope (422 naming what is wrong)."""
    if _is_manifest(doc):
        return FitRequest(object=doc)
    out: FitRequest = envelope(FitRequest, doc, 'expected a manifest or an object {"object" | "ref", "definition"?}')
    return out


def options(policy: str | None, clusters: str | None) -> tuple[str, list[str]]:
    """The query's policy and cluster names (400 on an unknown policy)."""
    policy = policy or POLICIES[0]
    if policy not in POLICIES:
        raise ProblemError(
            400, "invalid-parameter", "Invalid parameter", f"policy: {policy!r} is not one of {', '.join(POLICIES)}"
        )
    names = list(dict.fromkeys(n.strip() for n in (clusters or "").split(",") if n.strip()))
    return policy, names


async def in_cluster(
    service: Service, member: Member, groups: list[PodGroup], policy: str, state: dict[str, Any]
) -> dict[str, Any]:
    """One cluster's row: the verdict where the caller may list nodes and figures are ready,
    else why there is none."""
    got = await capacity.readable(service.auth.rights(state, member), member)
    if isinstance(got, capacity.Seen):
        return answers.withheld(member.name, got.state, got.reason or got.state)
    model = got
    nodes, free = model.capacity_snapshot()  # taken on the event loop
    p = await asyncio.to_thread(plan, groups, nodes, free, policy=policy)
    return answers.verdict(member.name, p, groups, model.capacity_partial())


async def fit(
    service: Service, doc: Any, state: dict[str, Any], policy: str | None = None, clusters: str | None = None
) -> dict[str, Any]:
    """The answer of POST /fit for one decoded body and the query's options (see the module
    docstring)."""
    req = request_of(doc)
    policy, names = options(policy, clusters)
    cluster = service.need_cluster("fits (where a workload can run)")
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
    rows = answers.ranked(await asyncio.gather(*(in_cluster(service, m, groups, policy, state) for m in members)))
    return {
        "workload": interpretation.get("workload"),
        "totals": interpretation.get("totals"),
        "policy": policy,
        "groups": [answers.group(g) for g in groups],
        "clusters": rows,
        "best": answers.best(rows),
    }
