"""A cluster's capacity built from one list of its Nodes and bound pods, for a service that
keeps no live model (`--cache false`): the same answers as the live model's inventory
(`LiveModel.capacity`, `nodes`, the fit's snapshot), read through `ListedCapacity`.

A read that finds the last lists older than `ttl` lists again (Nodes, then pods with a field
selector: bound and not ended, page by page, so only each pod's node and request vector are
kept), once for all the reads waiting on it; reads in between answer from memory. So the API
server sees at most two lists per `ttl` per cluster, whatever the number of readers, and a
change shows within `ttl` plus the lists' time. A failed list keeps no figure: the state says
why (the service may not list: "forbidden"; else "unavailable").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ..cluster.kube import NODES, PODS, Forbidden, Kube, KubeError
from .capacity import CapacityReads, ClusterCapacity, held_by

LIST_TTL = 5.0  # seconds a list answers reads before the next read lists again
# bound and not ended: what holds capacity (terminal pods are dropped by the API server already)
BOUND_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


class ListedCapacity(CapacityReads):
    """The capacity of one cluster as its last lists gave it (see the module docstring)."""

    def __init__(
        self, kube: Kube, namespaces: Sequence[str] | None = None, ttl: float = LIST_TTL, reader: str = "the service"
    ) -> None:
        self.kube, self.namespaces, self.ttl = kube, list(namespaces) if namespaces else None, ttl
        self.reader = reader  # who lists, for the message when that is forbidden (the CLI: its user)
        self.capacity_inventory = ClusterCapacity()
        self._listed_at: float | None = None  # monotonic time of the last good lists
        self._state: tuple[str, str | None] = ("starting", "the node and pod lists have not been read yet")
        self._lock = asyncio.Lock()
        self.lists = 0  # lists made, for the tests and the benchmark

    async def refresh(self) -> None:
        """List again when the last lists are older than `ttl` (one list for concurrent reads)."""
        if self._fresh():
            return
        async with self._lock:
            if self._fresh():
                return
            try:
                self.capacity_inventory = await self._list()
            except Forbidden as e:
                self._listed_at, self._state = None, ("forbidden", f"{self.reader} may not list nodes or pods: {e}")
            except (KubeError, OSError, TimeoutError) as e:
                self._listed_at, self._state = None, ("unavailable", f"the node and pod lists failed: {e}")
            else:
                self._listed_at, self._state = time.monotonic(), ("ready", None)

    def _fresh(self) -> bool:
        return self._listed_at is not None and time.monotonic() - self._listed_at < self.ttl

    async def _list(self) -> ClusterCapacity:
        cap = ClusterCapacity()
        inv = cap.inventory
        async for page, _ in self.kube.pages(NODES):
            for obj in page:
                node = ClusterCapacity.keep_node(obj)
                if node is not None:
                    inv.set_node(node)
        namespaces: Sequence[str | None] = self.namespaces or [None]
        for ns in namespaces:
            async for page, _ in self.kube.pages(PODS, ns, field_selector=BOUND_PODS):
                for pod in page:
                    held = held_by(pod)
                    if held is not None:
                        inv.hold(*held)
        self.lists += 1
        return cap

    # -- what CapacityReads answers from (the live model's reads, here of the last lists) -----
    def capacity_state(self) -> tuple[str, str | None]:
        return self._state

    def capacity_partial(self) -> str | None:
        if self.namespaces is not None:
            return (
                f"pods are counted in the listed namespaces only ({', '.join(self.namespaces)}); "
                "pods of other namespaces hold capacity that is not subtracted"
            )
        return None
