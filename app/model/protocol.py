"""What a fleet member holds in place of reading the API server for every request: a model of
its cluster.  Two implement it: the live model of this process (model/live.py) and, behind a
store, the cluster as the store holds it (store/reads.py).  The service and the fleet use it
through this protocol only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..capacity.nodes import Amounts, Node
from ..cluster.reader import WorkloadReader
from ..cluster.selectors import Selector
from .capacity import ClusterCapacity
from .events import ChangeLog
from .kinds import GK, KindWatch

StreamKey = tuple[str, str, str, str]  # (group, kind, namespace, name) of one workload


class NotSynced(Exception):
    """A model that cannot answer a read yet (nothing else may answer it): ask again shortly."""


@runtime_checkable
class CapacityModel(Protocol):
    """A cluster's capacity as a model holds it: its nodes and what the pods bound to them hold
    (model/capacity.py), answered from memory (the live model's inventory, or a store's copy)."""

    @property
    def capacity_inventory(self) -> ClusterCapacity: ...
    def capacity_state(self) -> tuple[str, str | None]:
        """(state, why not "ready"): "ready", "starting", "forbidden" or "unavailable"."""

    def capacity_partial(self) -> str | None:
        """Why some bound pods are not counted (None: every pod of the cluster is)."""

    def capacity(self, pool_labels: Sequence[str] = ...) -> dict[str, Any]: ...
    def nodes(
        self, label_selector: str | Selector | None = None, pool_labels: Sequence[str] = ...
    ) -> list[dict[str, Any]]: ...
    def capacity_snapshot(self) -> tuple[list[Node], dict[str, Amounts]]:
        """The nodes and their free amounts, what a plan takes (a copy: the plan may run in a thread)."""


class ClusterModel(WorkloadReader, CapacityModel, Protocol):
    """A cluster's workloads kept up to date, answering reads from what it holds."""

    @property
    def events(self) -> ChangeLog:
        """The change events of its rows (a fleet's models share one log)."""

    @property
    def watchers(self) -> dict[StreamKey, set[asyncio.Event]]:
        """The single-workload streams open on it, woken when their workload changes."""

    # -- lifecycle, as a fleet member drives it
    def start(self, stop: asyncio.Event) -> None: ...
    async def close(self) -> None: ...
    def reconnect_now(self) -> None: ...
    def definitions_changed(self) -> None: ...

    # -- state
    @property
    def synced(self) -> bool: ...
    @property
    def kinds(self) -> dict[GK, KindWatch]: ...
    def answers(self, kind: str | None, api_version: str | None, namespace: str | None) -> bool:
        """Whether this read can come from what the model holds (else from the API server)."""

    def refusal(self) -> Exception:
        """Why a read it does not answer gets no answer, where nothing else may give one."""

    def error(self) -> str | None: ...
    def status(self) -> dict[str, Any]: ...
    def rows(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]: ...
    @property
    def states(self) -> Mapping[str, Any]:
        """What it keeps per workload (the workload metrics read its size into their version)."""

    # -- single-workload stream tokens
    def sent_token(self, key: StreamKey, digest: bytes) -> str: ...
    def resumed(self, token: str, key: StreamKey) -> bytes | None: ...
