"""A compact view of a Kubernetes Node, the usage of the pods bound to it, and its free capacity.

Amounts are exact integers, in the units the kube-scheduler compares: `cpu` in millicores
(MilliValue), every other resource in its own unit (Value, rounded up): memory,
ephemeral-storage and hugepages-* in bytes; extended resources (nvidia.com/gpu, MIG slices such
as nvidia.com/mig-1g.10gb) and `pods` as counts. A pod's requests are its effective requests
(`app.engine.requests.pod_requests`: init containers, sidecars, pod-level resources, overhead),
converted one pod at a time and then summed, as the scheduler sums them.

`free = allocatable - requested` per resource, and `pods` free = allocatable pods - bound pods.
Free may be negative (pods the scheduler did not place, e.g. static pods, can over-commit a node).
Terminal pods (phase Succeeded or Failed) hold nothing; a pod counts once bound (spec.nodeName).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from app.engine.quantity import Quantity, QuantityError, format_bytes, format_millicores, parse_quantity
from app.engine.requests import pod_requests

CPU = "cpu"
PODS = "pods"
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

Amounts = dict[str, int]
# A pod's requests as a mapping, or as (resource, amount) pairs (what a caller keeps compactly)
Requests = Mapping[str, int] | Iterable[tuple[str, int]]


def _pairs(requests: Requests) -> Iterable[tuple[str, int]]:
    return requests.items() if isinstance(requests, Mapping) else requests


def units(resource: str, quantity: Quantity) -> int:
    """A quantity as the integer the scheduler compares: millicores for cpu, else Value()."""
    return quantity.milli_value() if resource == CPU else quantity.value()


def amounts(quantities: Mapping[str, Quantity]) -> Amounts:
    """Per-resource integer amounts of exact quantities (see `units`)."""
    return {sys.intern(name): units(name, q) for name, q in quantities.items()}


def byte_valued(resource: str) -> bool:
    return resource in BYTE_RESOURCES or resource.startswith("hugepages-")


def show(resource: str, amount: int) -> str:
    """An amount as a person reads it: `4`/`500m` cpu, `16Gi` memory, `8` GPUs."""
    if resource == CPU:
        return format_millicores(amount)
    if byte_valued(resource):
        return format_bytes(amount)
    return str(amount)


class Taint(NamedTuple):
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def as_mapping(raw: object) -> Mapping:
    """raw if it is a mapping, else an empty one (JSON read defensively)."""
    return raw if isinstance(raw, Mapping) else {}


def as_list(raw: object) -> list:
    """raw if it is a list, else an empty one."""
    return raw if isinstance(raw, list) else []


def _taints(raw: object) -> tuple[Taint, ...]:
    return tuple(
        Taint(sys.intern(str(t.get("key") or "")), str(t.get("value") or ""), sys.intern(str(t.get("effect") or "")))
        for t in as_list(raw)
        if isinstance(t, Mapping)
    )


def _ready(conditions: object) -> bool:
    for c in as_list(conditions):
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False  # no Ready condition: the node controller has not heard from the kubelet


def _allocatable(raw: object) -> Amounts:
    out: Amounts = {}
    for name, value in as_mapping(raw).items():
        try:
            out[sys.intern(str(name))] = units(str(name), parse_quantity(value))
        except (QuantityError, TypeError, ValueError):
            continue  # the API server never stores one; an unreadable amount counts as none
    return out


class Node:
    """What the filters and the fit read of a Node, and nothing else (no copy of the object)."""

    __slots__ = ("allocatable", "labels", "name", "ready", "taints", "unschedulable")

    def __init__(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        taints: Iterable[Taint] = (),
        unschedulable: bool = False,
        ready: bool = True,
        allocatable: Mapping[str, int] | None = None,
    ) -> None:
        self.name = name
        self.labels: dict[str, str] = dict(labels or {})
        self.taints: tuple[Taint, ...] = tuple(taints)
        self.unschedulable = unschedulable
        self.ready = ready
        self.allocatable: Amounts = dict(allocatable or {})

    @classmethod
    def from_object(cls, obj: Mapping) -> Node:
        """The view of a Node object (its JSON form, a plain dict)."""
        meta, spec, status = as_mapping(obj.get("metadata")), as_mapping(obj.get("spec")), as_mapping(obj.get("status"))
        return cls(
            sys.intern(str(meta.get("name") or "")),  # shared with what its pods hold (their node's name)
            labels={sys.intern(str(k)): sys.intern(str(v)) for k, v in as_mapping(meta.get("labels")).items()},
            taints=_taints(spec.get("taints")),
            unschedulable=spec.get("unschedulable") is True,
            ready=_ready(status.get("conditions")),
            allocatable=_allocatable(status.get("allocatable")),
        )

    def __repr__(self) -> str:
        return f"Node({self.name!r}, allocatable={self.allocatable!r})"


class Usage:
    """The requests of the pods bound to one node, summed, and how many pods they are."""

    __slots__ = ("pods", "requested")

    def __init__(self) -> None:
        self.requested: Amounts = {}
        self.pods = 0

    def add(self, requests: Requests) -> None:
        for name, n in _pairs(requests):
            self.requested[name] = self.requested.get(name, 0) + n
        self.pods += 1

    def remove(self, requests: Requests) -> None:
        for name, n in _pairs(requests):
            left = self.requested.get(name, 0) - n
            if left:
                self.requested[name] = left
            else:
                self.requested.pop(name, None)
        self.pods -= 1


def free(node: Node, usage: Usage | None = None) -> Amounts:
    """Per resource, allocatable minus requested (`pods`: allocatable pods minus bound pods).
    A resource the node does not have is absent (`pods` is always there); one only requested
    is negative."""
    out = dict(node.allocatable)
    out[PODS] = out.get(PODS, 0)
    if usage is None:
        return out
    for name, n in usage.requested.items():
        if name != PODS:  # a pod's slot is counted by the pods, not by a request named `pods`
            out[name] = out.get(name, 0) - n
    out[PODS] -= usage.pods
    return out


def holding_node(pod: Mapping) -> str | None:
    """The node a pod holds capacity on: bound, not terminal. None for a pod that holds none
    (unbound, Succeeded or Failed)."""
    node = as_mapping(pod.get("spec")).get("nodeName")
    if not node or as_mapping(pod.get("status")).get("phase") in TERMINAL_PHASES:
        return None
    return str(node)


def pod_contribution(pod: Mapping) -> tuple[str, Amounts] | None:
    """(node name, effective requests) of a pod that holds capacity (`holding_node`), else None.
    Raises QuantityError on a quantity the API server would reject."""
    node = holding_node(pod)
    return None if node is None else (node, amounts(pod_requests(as_mapping(pod.get("spec")))))


class Inventory:
    """Nodes and the usage of their pods, kept as Nodes and Pods come and go. Pods are keyed
    by the caller (e.g. namespace/name or uid): setting a pod again replaces what it held, so
    a phase change to Succeeded or a deletion gives its capacity back."""

    __slots__ = ("_held", "nodes", "usage")

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.usage: dict[str, Usage] = {}
        self._held: dict[str, tuple[str, Amounts]] = {}

    def set_node(self, node: Node) -> None:
        self.nodes[node.name] = node

    def remove_node(self, name: str) -> None:
        self.nodes.pop(name, None)  # its pods' usage stays until they go: they are still bound

    def set_pod(self, key: str, pod: Mapping) -> None:
        self.remove_pod(key)
        held = pod_contribution(pod)
        if held is None:
            return
        self._held[key] = held
        self.hold(*held)

    def remove_pod(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            self.release(*held)

    def hold(self, node: str, requests: Requests) -> None:
        """One pod bound to `node` holds `requests` there. With `release`, the usage side alone:
        for a caller that keeps what each pod holds itself (the live model's pod records), so
        the inventory keeps nothing per pod."""
        self.usage.setdefault(node, Usage()).add(requests)

    def release(self, node: str, requests: Requests) -> None:
        """The pod that held `requests` on `node` holds them no more (ended, deleted, moved)."""
        usage = self.usage.get(node)
        if usage is None:
            return
        usage.remove(requests)
        if not usage.pods:
            del self.usage[node]

    def free(self) -> dict[str, Amounts]:
        """Node name -> its free amounts (see `free`)."""
        return {name: free(node, self.usage.get(name)) for name, node in self.nodes.items()}
