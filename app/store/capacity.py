"""A cluster's capacity through the store: shards write their inventory, API replicas read it.

A shard's live model keeps the inventory (model/capacity.py); the shard writes it to the store
(one unit per cluster part: the lowest bucket it owns), and API replicas, which watch nothing,
rebuild the same `Node` views and usage from it so the filters, the plan and the capacity
answers run on them unchanged.  Per unit:

* `nodes`: a hash, node name -> `[labels, taints, unschedulable, ready, allocatable]` (orjson,
  deflated; taints `[key, value, effect]`, allocatable as the integer amounts of capacity/nodes.py).
  Written by differences: a node's field is set only when its view changed, deleted when the
  node went, so a relist or a node's status heartbeat writes nothing;
* `cap`: a hash of two fields. `head`: {state, reason, partial, watching, at (ms), v (this
  write's version), nv (the version of the last `nodes` change), covers (the buckets whose pods
  the usage counts)}. `usage`: node name -> `[pods, {resource: requested}]` (orjson, deflated),
  the whole map each time (free = allocatable - requested is worked out by the reader, so the usage of
  several buckets' shards can be summed).

The write is one fenced script call (writer.py) with the meta's `capacity` (= the head's `v`)
and a `CAPACITY` entry in the stream, which readers follow: a replica reads `cap` (and `nodes`
when `nv` moved) as soon as the entry comes, and also when its meta poll sees another `v`.
Writes are coalesced: at most one per `INTERVAL` per unit, the first change after a quiet
while written at once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..capacity.nodes import Node, Taint, Usage
from ..model.capacity import ClusterCapacity
from ..model.packing import deflate, inflate
from .writer import Ops

INTERVAL = 1.0  # seconds between two capacity writes of one unit at least


def encode_node(n: Node) -> bytes:
    # deflated: label keys repeat within a node (feature discovery's 30 `feature.node...` keys),
    # ~1.8 KB of JSON -> ~340 bytes
    return deflate(orjson.dumps([n.labels, [list(t) for t in n.taints], n.unschedulable, n.ready, n.allocatable]))


def decode_node(name: str, raw: bytes) -> Node:
    labels, taints, unschedulable, ready, allocatable = orjson.loads(inflate(raw))
    i = sys.intern  # label keys and common values repeat on every node: held once
    return Node(
        i(name),
        labels={i(k): i(v) for k, v in labels.items()},
        taints=(Taint(i(k), v, i(e)) for k, v, e in taints),
        unschedulable=bool(unschedulable),
        ready=bool(ready),
        allocatable={i(k): int(v) for k, v in allocatable.items()},
    )


def encode_usage(usage: Mapping[str, Usage]) -> bytes:
    # deflated: 1,500 busy nodes' usage is ~108 KB of JSON, ~8 KB deflated (0.3 ms)
    return deflate(orjson.dumps({name: [u.pods, u.requested] for name, u in usage.items() if u.pods}))


def decode_usage(raw: bytes) -> dict[str, Usage]:
    out: dict[str, Usage] = {}
    for name, (pods, requested) in orjson.loads(inflate(raw)).items():
        u = out[sys.intern(name)] = Usage()
        u.pods, u.requested = int(pods), {sys.intern(k): int(v) for k, v in requested.items()}
    return out


# -- the shard's side --------------------------------------------------------------------------


class CapacityExport:
    """What a cluster part wrote of its model's inventory, and what is due (`touch` on each change)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag  # owner:epoch, so versions never repeat across owners
        self.written: dict[str, bytes] = {}  # node name -> its record as the store holds it
        self.nodes_due: set[str] = set()
        self.all_due = True  # compare every node (after a claim, or with what the store holds)
        self.due = True
        self.head: tuple[Any, ...] | None = None  # the head's figures last written
        self.last = 0.0  # monotonic time of the last write
        self.count = 0
        self.nodes_version = ""

    def touch(self, node: str | None) -> bool:
        """A change (a node's name, None: usage). True when it is the first since the last write."""
        first = not self.due
        if node is not None:
            self.nodes_due.add(node)
        self.due = True
        return first

    def held(self, nodes: Mapping[str, bytes]) -> None:
        """What the store holds (a new owner's resync): differences from it only are written."""
        self.written = dict(nodes)
        self.all_due = self.due = True
        self.head = None

    def wait(self) -> float | None:
        """Seconds until a write is due (0: now), None when nothing is."""
        return max(0.0, self.last + INTERVAL - time.monotonic()) if self.due else None

    def into(
        self, o: Ops, cap: ClusterCapacity, state: tuple[str, str | None], partial: str | None, covers: Iterable[int]
    ) -> None:
        """This write's operations into `o` (call when `wait()` is 0)."""
        inv = cap.inventory
        names = set(inv.nodes) | set(self.written) if self.all_due else self.nodes_due
        changed = 0
        for name in names:
            n = inv.nodes.get(name)
            if n is None:
                if self.written.pop(name, None) is not None:
                    o.hdel("nodes", name)
                    changed += 1
                continue
            data = encode_node(n)
            if self.written.get(name) != data:
                o.hset("nodes", name, data)
                self.written[name] = data
                changed += 1
        self.count += 1
        v = f"{self.tag}:{self.count}"
        if changed or not self.nodes_version:
            self.nodes_version = v
        head = {
            "state": state[0],
            "reason": state[1],
            "partial": partial,
            "watching": cap.watching,
            "at": int(time.time() * 1000),
            "v": v,
            "nv": self.nodes_version,
            "covers": sorted(covers),
        }
        o.hset("cap", "head", orjson.dumps(head))
        o.hset("cap", "usage", encode_usage(inv.usage))
        o.hset("meta", "capacity", v)
        o.xadd("CAPACITY", "")
        self.head = (state, partial, cap.watching)
        self.nodes_due.clear()
        self.all_due = self.due = False
        self.last = time.monotonic()

    def head_moved(self, state: tuple[str, str | None], partial: str | None, watching: bool) -> None:
        """The inventory's state changed without a node or pod event (a list arrived, a watch
        reconnects): due as a change."""
        if self.head != (state, partial, watching):
            self.due = True


# -- the API replica's side ----------------------------------------------------------------------


class UnitCapacity:
    """One unit's capacity as a replica read it."""

    __slots__ = ("head", "nodes", "usage")

    def __init__(self, head: dict[str, Any], nodes: dict[str, Node], usage: dict[str, Usage]) -> None:
        self.head, self.nodes, self.usage = head, nodes, usage


def read_unit(
    head: dict[str, Any] | None, usage: bytes | None, nodes: Mapping[bytes, bytes] | None, before: UnitCapacity | None
) -> UnitCapacity | None:
    """A unit's capacity from what the store returned (`nodes` None: unchanged since `before`)."""
    if head is None:
        return None
    if nodes is not None:
        got = {k.decode(): decode_node(k.decode(), v) for k, v in nodes.items()}
    else:
        got = before.nodes if before is not None else {}
    return UnitCapacity(head, got, decode_usage(usage) if usage else {})


class StoreCapacity(ClusterCapacity):
    """A cluster's inventory rebuilt from its units (nodes of the latest unit, usage summed over
    the units, each bucket counted once): what the capacity answers and the plan read."""

    def __init__(self, watching: bool) -> None:
        super().__init__()
        self._watching = watching

    @property
    def watching(self) -> bool:
        return self._watching


def merged(
    units: Iterable[UnitCapacity], buckets: int, watching: bool
) -> tuple[StoreCapacity, tuple[str, str | None], str | None]:
    """(inventory, (state, why not ready), partial) of a cluster from its units' capacity.

    Each unit's usage counts the pods of the buckets its head `covers`; when ownership moves,
    two heads may cover one bucket for a moment: the latest write counts it, the other is left
    out, and a bucket no head counts makes the figures partial."""
    cap = StoreCapacity(watching)
    inv = cap.inventory
    latest = sorted(units, key=lambda u: -int(u.head.get("at") or 0))
    if not latest:
        return cap, ("starting", "no shard has written this cluster's capacity to the store yet"), None
    for n in latest[0].nodes.values():
        inv.set_node(n)
    covered: set[int] = set()
    for u in latest:
        covers = set(u.head.get("covers") or ())
        if covers & covered:
            continue
        covered |= covers
        for name, use in u.usage.items():
            total = inv.usage.setdefault(name, Usage())
            _add(total, use)
    head = latest[0].head
    bad = next((u.head for u in latest if u.head.get("state") != "ready"), None)
    state = (bad["state"], bad.get("reason")) if bad is not None else ("ready", None)
    partial = head.get("partial")
    missing = set(range(max(1, buckets))) - covered
    if missing and state[0] == "ready":
        why = (
            f"the pods of {len(missing)} of {max(1, buckets)} namespace buckets are not counted yet "
            "(a shard is taking them over)"
        )
        partial = f"{partial}; {why}" if partial else why
    return cap, state, partial


def _add(total: Usage, use: Usage) -> None:
    for k, v in use.requested.items():
        total.requested[k] = total.requested.get(k, 0) + v
    total.pods += use.pods
