"""Capacity as the service answers it: the `capacity` of GET /clusters and /clusters/{c}, the rows
of GET /clusters/{c}/nodes, and the capacity series of /metrics/workloads.

Figures come from what holds a member's capacity (`source`: its model, memory, no API request:
the live model's inventory, or on a store's API replica what its shards wrote to the store; with
`--cache false`, its last node and pod lists, `app.model.listed`) and are given
only to a caller who may `list nodes` in that cluster (SubjectAccessReview there, through
`Authorizer.rights`, as every other read), asked before anything is read: anyone else gets
`capacity: null` and `capacityVisible: false`, the same words whatever the cluster holds.
The shapes are written once, in `app.capacity.answers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..capacity import answers
from ..cluster.kube import NODES
from ..cluster.listing import ListQuery, QueryError, page_token, parse_query
from ..cluster.reader import Allow
from ..fleet.member import Member
from ..model.capacity import CapacityUnavailable
from ..model.protocol import CapacityModel
from .fleet_reads import READ_BOUND
from .problems import ProblemError

MAY_NOT_LIST = "not allowed to list nodes in this cluster"
NOT_CONNECTED = "the cluster is not connected"
NO_INVENTORY = "this cluster's model does not carry capacity"


async def may_list_nodes(allow: Allow) -> bool:
    """The cluster-scoped `list nodes` right (raises the 503 of a cluster that cannot check)."""
    return await allow("list", NODES, None, None)


async def source(member: Member) -> CapacityModel:
    """What holds the member's capacity: its model (the live model's inventory, or on a store's
    API replica what its shards wrote to the store, app/store/capacity.py), or with
    `--cache false` its lists (read again when older than their ttl); else CapacityUnavailable,
    saying why."""
    if member.listed is not None:
        try:
            await asyncio.wait_for(member.listed.refresh(), READ_BOUND)
        except TimeoutError:
            raise CapacityUnavailable(f"the node and pod lists did not answer within {READ_BOUND:g} s") from None
        return member.listed
    model = member.model
    if model is None:
        raise CapacityUnavailable(NOT_CONNECTED)
    if not isinstance(model, CapacityModel):
        raise CapacityUnavailable(NO_INVENTORY)
    return model


@dataclass(frozen=True)
class Seen:
    """A cluster's capacity as one caller may see it: `summary` (the model's, integer figures)
    only when `visible` and `state` is "ready"; else `reason` says why there is none."""

    visible: bool
    state: str
    reason: str | None = None
    summary: dict[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        """The capacity fields of a /clusters item."""
        return {
            "capacity": answers.capacity(self.summary) if self.summary is not None else None,
            "capacityVisible": self.visible,
            "capacityState": self.state,
            "capacityReason": self.reason,
        }


async def readable(allow: Allow, member: Member) -> CapacityModel | Seen:
    """What holds the member's capacity, when the caller may `list nodes` there and its figures
    are ready; else a Seen saying why not. The caller's right is asked before anything is read
    (with `--cache false`, before any list is made). /clusters and POST /fit both read this way."""
    try:
        allowed = await asyncio.wait_for(may_list_nodes(allow), READ_BOUND)
    except ProblemError as e:  # its rights cannot be checked there now: the item still answers
        return Seen(False, "unavailable", e.detail)
    except TimeoutError:
        return Seen(False, "unavailable", f"the caller's rights could not be checked within {READ_BOUND:g} s")
    if not allowed:
        return Seen(False, "forbidden", MAY_NOT_LIST)
    try:
        model = await source(member)
    except CapacityUnavailable as e:
        return Seen(True, "unavailable", str(e))
    state, why = model.capacity_state()
    return model if state == "ready" else Seen(True, state, why)


async def for_caller(allow: Allow, member: Member, pool_labels: Sequence[str]) -> Seen:
    """One cluster's capacity for a caller: the figures, or why they are withheld."""
    got = await readable(allow, member)
    return got if isinstance(got, Seen) else Seen(True, "ready", None, got.capacity(pool_labels))


async def add_to_items(
    items: list[dict[str, Any]],
    members: Mapping[str, Member],
    allow_for: Callable[[Member], Allow],
    pool_labels: Sequence[str],
) -> list[dict[str, Any]]:
    """The /clusters items, each with its capacity fields (the rights of every cluster asked at once)."""

    async def one(item: dict[str, Any]) -> dict[str, Any]:
        m = members.get(item["name"])
        seen = (
            await for_caller(allow_for(m), m, pool_labels)
            if m is not None
            else Seen(True, "unavailable", NOT_CONNECTED)
        )
        return {**item, **seen.fields()}

    return list(await asyncio.gather(*(one(i) for i in items)))


# -- GET /clusters/{c}/nodes -------------------------------------------------------------------


def page_query(
    cluster: str, label_selector: str | None, limit: int | None, continue_: str | None
) -> tuple[ListQuery, str | None]:
    """The list query of the nodes route (the workload lists' grammar and limits; 400 on a bad
    parameter) and the name after which the page starts."""
    try:
        q = parse_query(label_selector=label_selector, limit=limit, continue_=continue_, scope=("nodes", cluster))
    except QueryError as e:
        raise ProblemError(400, "invalid-list-query", "Invalid list query", str(e)) from None
    if q.after is not None and (len(q.after) != 1 or not isinstance(q.after[0], str)):
        raise ProblemError(400, "invalid-list-query", "Invalid list query", "continue: not a token of this list")
    return q, q.after[0] if q.after is not None else None


async def node_page(
    member: Member, label_selector: str | None, limit: int | None, continue_: str | None, pool_labels: Sequence[str]
) -> dict[str, Any]:
    """One page of the member's nodes, sorted by name; `metadata.continue` is an opaque token of
    the last name given (paging by name: stable while nodes come and go).  Raises
    CapacityUnavailable when the model holds no figures (503)."""
    q, after = page_query(member.name, label_selector, limit, continue_)
    model = await source(member)
    rows = model.nodes(q.selector, pool_labels)
    if after is not None:
        rows = [r for r in rows if r["name"] > after]
    token = None
    if limit is not None and len(rows) > limit:
        rows = rows[:limit]
        token = page_token(q.signature, (rows[-1]["name"],))
    return {
        "metadata": {"continue": token} if token else {},
        "cluster": member.name,
        "items": [answers.node(r) for r in rows],
        "partial": model.capacity_partial(),
        "watching": model.capacity_inventory.watching,
    }


# -- /metrics/workloads ------------------------------------------------------------------------

METRIC_LABELS = ["cluster", "pool_label", "pool", "resource"]


class _Series(Collector):
    """A collector of the given clusters' capacity (cluster name, `capacity` answer)."""

    def __init__(self, clusters: list[tuple[str, dict[str, Any]]]):
        self.clusters = clusters

    def collect(self) -> Iterator[GaugeMetricFamily]:
        help_ = "per cluster, node pool (--pool-label; empty: nodes with none) and resource, summed over the nodes; "
        units = "cpu in millicores, memory-like resources in bytes, others as counts, pods as pods"
        alloc = GaugeMetricFamily("wlmap_cluster_allocatable", "Allocatable " + help_ + units, labels=METRIC_LABELS)
        free = GaugeMetricFamily(
            "wlmap_cluster_free", "Free (allocatable - requested) " + help_ + units, labels=METRIC_LABELS
        )
        for name, cap in self.clusters:
            for pool in cap.get("pools") or ():
                for res, r in pool["resources"].items():
                    labels = [name, pool["label"] or "", pool["value"] or "", res]
                    alloc.add_metric(labels, r["allocatable"])
                    free.add_metric(labels, r["free"])
        yield alloc
        yield free


async def metric_text(
    members: Sequence[Member], allow_for: Callable[[Member], Allow], pool_labels: Sequence[str]
) -> bytes:
    """wlmap_cluster_allocatable and wlmap_cluster_free of the clusters where the caller may
    `list nodes` (and whose figures are ready), computed at scrape time from the models; series:
    clusters x pools x resources."""

    async def one(m: Member) -> tuple[str, dict[str, Any]] | None:
        seen = await for_caller(allow_for(m), m, pool_labels)
        return (m.name, seen.summary) if seen.summary is not None else None

    clusters = [c for c in await asyncio.gather(*(one(m) for m in members)) if c is not None]
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Series(sorted(clusters, key=lambda c: c[0])))
    out: bytes = generate_latest(reg)
    return out
