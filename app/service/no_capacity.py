"""The `NoCapacity` diagnosis entry: a live answer whose pods are not all scheduled says when its
cluster's free capacity cannot take them now, and in a fleet, which other clusters could take
the whole workload now (`fitsIn`).

The pods still to place are each pod group's (`app.capacity.workload.pod_groups` of the live
answer itself) less its pods already bound to a node: those hold their capacity in the
inventory already. The verdict is the fit's (`fit.in_cluster`, policy `pack`), so it names
nodes: it is given only to a caller who may `list nodes` in that cluster, and `fitsIn` lists
only clusters where the caller may too. A workload whose pods are all bound costs a byte
search.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson

from ..capacity.plan import POLICIES, PodGroup
from ..capacity.workload import NotFittable, pod_groups
from ..fleet.member import Member
from .fit import in_cluster
from .service import Service


def unplaced(groups: Sequence[PodGroup], pods: Sequence[dict[str, Any]]) -> list[PodGroup]:
    """Each group with its count less the pods of its component and instance bound to a node;
    groups with nothing left are dropped."""
    bound = Counter((p.get("component"), p.get("instance")) for p in pods if p.get("node"))
    out = []
    for g in groups:
        left = g.count - bound[(g.component or g.name, g.instance)]
        if left > 0:
            out.append(dataclasses.replace(g, count=left))
    return out


async def with_verdict(service: Service, member: Member, body: bytes, state: dict[str, Any]) -> bytes:
    """The live answer `body` with a `NoCapacity` entry first in its diagnosis when its pods that
    wait fit nowhere in `member` now (see the module docstring)."""
    if b'"node":null' not in body:  # every pod it has is bound (or it has none yet)
        return body
    doc = orjson.loads(body)
    pods = (doc.get("live") or {}).get("pods") or []
    if not any(not p.get("node") and p.get("phase") in (None, "Pending") for p in pods):
        return body
    try:
        groups = pod_groups(doc)
    except NotFittable:
        return body  # a component failed: its pods are unknown
    waiting = unplaced(groups, pods)
    if not waiting:
        return body
    here = await in_cluster(service, member, waiting, POLICIES[0], state)
    if here.get("fits") is not False:
        return body  # it fits (something else holds it back), or no verdict for this caller
    others = [m for m in service.cluster.fleet.members.values() if m is not member] if service.cluster else []
    rows = await asyncio.gather(*(in_cluster(service, m, groups, POLICIES[0], state) for m in others))
    components = {s["component"] for s in here["shortfall"]}
    entry = {
        "severity": "error",
        "reason": "NoCapacity",
        "message": f"fits nowhere in this cluster now: {here['message']}",
        "component": components.pop() if len(components) == 1 else None,
        "pods": sum(g.count for g in waiting),
        "since": None,
        "fitsIn": sorted(r["cluster"] for r in rows if r.get("fits")),
    }
    doc["diagnosis"] = [entry, *doc["diagnosis"]]
    return orjson.dumps(doc)
