"""The capacity inventory a live model keeps of its cluster: Nodes (watched, cluster-scoped) and
what every pod bound to one holds there, for `LiveModel.capacity` and `LiveModel.nodes`.

* **Nodes**: an informer keeps each Node as its compact view (`app.capacity.nodes.Node`: name,
  labels, taints, cordon, Ready, allocatable as integers); the informer's copy and the inventory
  share that one object.
* **Pods**: the model's pod informer sees every pod it watches (all namespaces, or those of
  `--namespaces`), not only pods of known workloads: DaemonSet and system pods take capacity too.
  What a pod holds (`Held`: its node's name and its effective requests as integer amounts) is read
  from the whole object when the informer hands it over (the kept projection drops container
  resources) and kept on the pod's record (`Obj.held`), so the inventory keeps nothing per pod:
  an informer event subtracts what the old record held and adds what the new one holds.
  A pod holds nothing unbound or once terminal (phase Succeeded or Failed).

Memory (tests/model/test_capacity_inventory.py, tracemalloc, CPython 3.11): a GPU node with 34
labels (feature discovery's) costs about 1.8 KB in all (the informer's entry, the view with its
labels, the inventory's entry and the node's usage), under the 2 KB target; label keys and
common values are interned, shared by every node. A bound pod adds about 64 bytes to its record
(the `held` pair and its slot; the request vector is shared by the pods with the same requests,
the node name by the pods on one node), against about 1.9 KB for the pod record the model
keeps anyway; an unbound or ended pod adds the 8-byte slot.

Capacity is not part of the model's `synced`: a cluster whose Nodes the service may not list
still serves its workloads, and capacity says it is unavailable and why.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..capacity.nodes import PODS, Amounts, Inventory, Node, Usage, amounts, as_mapping, free, holding_node
from ..capacity.pools import DEFAULT_POOL_LABELS
from ..cluster.informer import Informer
from ..cluster.selectors import Selector, parse
from ..engine.quantity import QuantityError
from ..engine.requests import pod_requests, pod_requests_key

# (node name, ((resource, amount), ...)): what one bound, non-terminal pod holds on its node
Held = tuple[str, tuple[tuple[str, int], ...]]


# request vectors, shared between the pods that have the same one (replicas of one workload);
# bounded: past this many distinct vectors a pod keeps its own
_SHAPES: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = {}
MAX_SHAPES = 4096
# what pod_requests reads of a spec (pod_requests_key) -> its shape, bounded as _SHAPES
_BY_KEY: dict[bytes, tuple[tuple[str, int], ...]] = {}


def held_by(pod: Mapping[str, Any]) -> Held | None:
    """What a pod object (whole, as the API server sends it) holds on its node; None if nothing
    (unbound, terminal, or a request quantity the API server would have rejected).

    On the pod-event path: most events change a pod's status, not its requests, and pods of one
    template share them, so the shape is found by what pod_requests reads (`pod_requests_key`,
    ~1.5 µs) and worked out (~10 µs) only for a key not seen yet."""
    node = holding_node(pod)
    if node is None:
        return None
    spec = as_mapping(pod.get("spec"))
    key = pod_requests_key(spec)
    shape = _BY_KEY.get(key) if key is not None else None
    if shape is None:
        try:
            got = tuple(sorted(amounts(pod_requests(spec)).items()))
        except (QuantityError, TypeError, ValueError):
            return None
        shape = _SHAPES.get(got)
        if shape is None:
            shape = got
            if len(_SHAPES) < MAX_SHAPES:
                _SHAPES[got] = got
        if key is not None and len(_BY_KEY) < MAX_SHAPES:
            _BY_KEY[key] = shape
    return sys.intern(node), shape


class CapacityUnavailable(Exception):
    """The model cannot tell this cluster's capacity now; the message says why."""


def requested(usage: Usage | None) -> Amounts:
    """Per resource, what the node's pods request (`pods`: how many pods are bound)."""
    if usage is None:
        return {PODS: 0}
    out = {k: v for k, v in usage.requested.items() if k != PODS}
    out[PODS] = usage.pods
    return out


def schedulable(node: Node) -> bool:
    return node.ready and not node.unschedulable


def pool_of(node: Node, pool_labels: Sequence[str]) -> tuple[str, str] | None:
    """(label key, value) of the first of `pool_labels` the node has; None: it has none."""
    for key in pool_labels:
        value = node.labels.get(key)
        if value is not None:
            return key, value
    return None


def figures(nodes: Iterable[Node], usage: Mapping[str, Usage]) -> dict[str, Any]:
    """Counts and per-resource sums of some nodes (see `ClusterCapacity.summary`)."""
    count = {"total": 0, "ready": 0, "schedulable": 0}
    resources: dict[str, dict[str, Any]] = {}
    for n in nodes:
        count["total"] += 1
        count["ready"] += n.ready
        on = schedulable(n)
        count["schedulable"] += on
        u = usage.get(n.name)
        req, left = requested(u), free(n, u)
        for name, amount in left.items():
            r = resources.get(name)
            if r is None:
                r = resources[name] = {"allocatable": 0, "requested": 0, "free": 0, "largestFree": None}
            r["allocatable"] += n.allocatable.get(name, 0)
            r["requested"] += req.get(name, 0)
            r["free"] += amount
            best = r["largestFree"]
            if on and (best is None or amount > best["amount"] or (amount == best["amount"] and n.name < best["node"])):
                r["largestFree"] = {"amount": amount, "node": n.name}
    return {"nodes": count, "resources": dict(sorted(resources.items()))}


class ClusterCapacity:
    """One cluster's inventory: its Nodes' views and their pods' usage, fed by the model's node
    informer (`keep_node`, `on_node`) and pod informer (`on_pod`, with each record's `held`)."""

    def __init__(self) -> None:
        self.inventory = Inventory()
        self.informer: Informer | None = None  # the Node informer (None: not started)
        # told of each change (a node's name, None: some node's usage) by a shard, which writes
        # the inventory to the store (app/store/capacity.py); None in a single process
        self.on_change: Callable[[str | None], None] | None = None

    # -- the informers' side ----------------------------------------------------------------
    @staticmethod
    def keep_node(obj: dict[str, Any]) -> Node | None:
        node = Node.from_object(obj)
        # compared by identity: a relist hands every node over again, so the inventory always
        # holds the very view the informer's copy holds (never two of one node)
        return node if node.name else None

    def on_node(self, type_: str, key: Any, old: Node | None, new: Node | None) -> None:
        if new is not None:
            if old is not None and old.name != new.name:
                self.inventory.remove_node(old.name)
            self.inventory.set_node(new)
        elif old is not None:
            self.inventory.remove_node(old.name)
        if self.on_change is not None:
            for n in {n.name for n in (old, new) if n is not None}:
                self.on_change(n)

    def on_pod(self, old: Held | None, new: Held | None) -> None:
        """A pod's record changed from one that held `old` to one that holds `new`."""
        if old is new:
            return
        if old is not None:
            self.inventory.release(*old)
        if new is not None:
            self.inventory.hold(*new)
        if self.on_change is not None:
            self.on_change(None)

    # -- state ------------------------------------------------------------------------------
    def state(self, pod_informers: Sequence[Informer] | None) -> tuple[str, str | None]:
        """(state, why it is not "ready"): "ready" (figures current, or held from the last
        list while a watch reconnects), "starting" (a list has not arrived), "forbidden" (the
        service may not list nodes or pods), "unavailable" (nodes not served, or not watched)."""
        inf = self.informer
        if inf is None:
            return "unavailable", "nodes are not watched"
        if inf.state == "forbidden":
            return "forbidden", f"the service may not list nodes: {inf.error}"
        if inf.state == "not-served":
            return "unavailable", inf.error
        refused = next((i for i in pod_informers or () if i.state == "forbidden"), None)
        if refused is not None:
            return "forbidden", f"the service may not list pods: {refused.error}"
        if not inf.synced_once.is_set() or not pod_informers or not all(i.terminal for i in pod_informers):
            return "starting", inf.error or "the node and pod lists have not arrived yet"
        return "ready", None

    @property
    def watching(self) -> bool:
        return self.informer is not None and self.informer.connected

    # -- reads ------------------------------------------------------------------------------
    def snapshot(self) -> tuple[list[Node], dict[str, Amounts]]:
        """(nodes, node name -> free amounts): what `plan` takes, copied on the event loop so a
        plan may run in a thread while the informers go on."""
        inv = self.inventory
        return list(inv.nodes.values()), inv.free()

    def answer(self, state: tuple[str, str | None], partial: str | None, pool_labels: Sequence[str]) -> dict[str, Any]:
        """`capacity` (see `LiveModel.capacity`) in `state` (state, why not "ready"): the
        figures only when it is "ready"."""
        head: dict[str, Any] = {
            "available": state[0] == "ready",
            "state": state[0],
            "reason": state[1],
            "partial": partial,
            "watching": self.watching,
        }
        return head | self.summary(pool_labels) if head["available"] else head

    def listed(
        self, state: tuple[str, str | None], selector: str | Selector | None, pool_labels: Sequence[str]
    ) -> list[dict[str, Any]]:
        """`nodes` (see `LiveModel.nodes`): CapacityUnavailable unless `state` is ready."""
        if state[0] != "ready":
            raise CapacityUnavailable(state[1] or state[0])
        return self.node_rows(selector, pool_labels)

    def summary(self, pool_labels: Sequence[str]) -> dict[str, Any]:
        """The figures of every node, and per node pool (`pool_of`): see `LiveModel.capacity`."""
        inv = self.inventory
        out = figures(inv.nodes.values(), inv.usage)
        groups: dict[tuple[str, str] | None, list[Node]] = {}
        for n in inv.nodes.values():
            groups.setdefault(pool_of(n, pool_labels), []).append(n)
        order = {k: i for i, k in enumerate(pool_labels)}
        pools = []
        for pool in sorted(groups, key=lambda p: (1, 0, "") if p is None else (0, order[p[0]], p[1])):
            label, value = pool if pool is not None else (None, None)
            pools.append({"label": label, "value": value, **figures(groups[pool], inv.usage)})
        out["pools"] = pools
        # pods bound to a node the inventory does not hold (deleted, or not listed yet)
        out["podsOnUnknownNodes"] = sum(u.pods for name, u in inv.usage.items() if name not in inv.nodes)
        return out

    def node_rows(self, selector: str | Selector | None, pool_labels: Sequence[str]) -> list[dict[str, Any]]:
        """Each node (matching the label selector), sorted by name: see `LiveModel.nodes`.
        Raises SelectorError on a selector that does not parse."""
        sel = parse(selector) if isinstance(selector, str) else selector
        inv = self.inventory
        rows = []
        for name in sorted(inv.nodes):
            n = inv.nodes[name]
            if sel is not None and not sel.matches(n.labels):
                continue
            u = inv.usage.get(name)
            pool = pool_of(n, pool_labels)
            rows.append(
                {
                    "name": name,
                    "labels": dict(n.labels),
                    "pool": {"label": pool[0], "value": pool[1]} if pool else None,
                    "taints": [{"key": t.key, "value": t.value or None, "effect": t.effect} for t in n.taints],
                    "unschedulable": n.unschedulable,
                    "ready": n.ready,
                    "schedulable": schedulable(n),
                    "allocatable": dict(sorted(n.allocatable.items())),
                    "requested": dict(sorted(requested(u).items())),
                    "free": dict(sorted(free(n, u).items())),
                    "pods": u.pods if u is not None else 0,
                }
            )
        return rows


class _Inventoried(Protocol):
    @property
    def capacity_inventory(self) -> ClusterCapacity: ...
    def capacity_state(self) -> tuple[str, str | None]: ...
    def capacity_partial(self) -> str | None: ...


class CapacityReads:
    """The capacity reads of a model (model/protocol.py's CapacityModel) from its inventory,
    state and partial: the live model's own, or a store's copy (app/store/capacity.py)."""

    def capacity(self: _Inventoried, pool_labels: Sequence[str] = DEFAULT_POOL_LABELS) -> dict[str, Any]:
        """The cluster's capacity from memory (no API request):

        - `available`: false when the figures are withheld, `reason` says why (the service may
          not list nodes or pods: `state` "forbidden"; the lists have not arrived: "starting";
          else "unavailable"), and no other figure is given;
        - `partial`: None, or why pods of some namespaces are not counted (`--namespaces`, a
          shard's share): free is then an upper bound;
        - `watching`: the node watch is open (false: figures of the last list, reconnecting);
        - `nodes`: {total, ready, schedulable} (schedulable: Ready and not cordoned);
        - `resources`: per resource (sorted; `cpu` in millicores, bytes for memory-like ones,
          counts for the rest, `pods` = bound pods), {allocatable, requested, free} summed over
          every node (free may be negative: over-committed nodes), and `largestFree`: the most
          free on one schedulable node, {amount, node} (ties: the name that sorts first), None
          when no schedulable node has the resource;
        - `pools`: per node pool, the node's first label among `pool_labels` ({label, value};
          nodes with none: label and value None, last), each with the same `nodes` and
          `resources`; ordered by the label's place in `pool_labels`, then value;
        - `podsOnUnknownNodes`: pods bound to a node the model does not hold (not in figures).
        """
        return self.capacity_inventory.answer(self.capacity_state(), self.capacity_partial(), pool_labels)

    def nodes(
        self: _Inventoried,
        label_selector: str | Selector | None = None,
        pool_labels: Sequence[str] = DEFAULT_POOL_LABELS,
    ) -> list[dict[str, Any]]:
        """Every node (matching `label_selector`, the list routes' grammar), sorted by name:
        {name, labels, pool ({label, value} or None), taints ([{key, value, effect}]),
        unschedulable, ready, schedulable, allocatable, requested, free (per resource, the
        units of `capacity`; `requested.pods`: bound pods), pods (bound pods)}.
        Raises CapacityUnavailable (the reason of `capacity`) when the figures are withheld,
        SelectorError when the selector does not parse."""
        return self.capacity_inventory.listed(self.capacity_state(), label_selector, pool_labels)

    def capacity_snapshot(self: _Inventoried) -> tuple[list[Node], dict[str, Amounts]]:
        """The nodes and their free amounts, for a plan (see `ClusterCapacity.snapshot`)."""
        return self.capacity_inventory.snapshot()
