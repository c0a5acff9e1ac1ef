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
from typing import Any

import orjson

from ..capacity import answers
from ..capacity.plan import POLICIES
from ..fleet.member import Member
from .fit import in_cluster
from .service import Service


async def with_verdict(service: Service, member: Member, body: bytes, state: dict[str, Any]) -> bytes:
    """The live answer `body` with a `NoCapacity` entry first in its diagnosis when its pods that
    wait fit nowhere in `member` now (see the module docstring)."""
    if b'"node":null' not in body:  # every pod it has is bound (or it has none yet)
        return body
    doc = orjson.loads(body)
    found = answers.waiting(doc)
    if found is None:
        return body
    groups, left = found
    here = await in_cluster(service, member, left, POLICIES[0], state)
    if here.get("fits") is not False:
        return body  # it fits (something else holds it back), or no verdict for this caller
    others = [m for m in service.cluster.fleet.members.values() if m is not member] if service.cluster else []
    rows = await asyncio.gather(*(in_cluster(service, m, groups, POLICIES[0], state) for m in others))
    entry = answers.no_capacity(here, left, (r["cluster"] for r in rows if r.get("fits")))
    doc["diagnosis"] = [entry, *doc.get("diagnosis", [])]
    return orjson.dumps(doc)
