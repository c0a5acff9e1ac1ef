"""One kind a model watches: its resource, its definition, its informers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..cluster.informer import Informer
from ..cluster.kube import Resource
from ..jqlang.paths import Tree
from ..karta.load import Definition

GK = tuple[str, str]  # (group, kind)


@dataclass
class KindWatch:
    """One watched kind: its resource, definition (None: an owner kind, metadata only), informers."""

    resource: Resource
    definition: Definition | None
    projection: Tree | bool | None  # None: metadata only
    informers: list[Informer] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    is_pod: bool = False

    @property
    def gk(self) -> GK:
        return (self.resource.group, self.resource.kind)

    @property
    def terminal(self) -> bool:
        return all(i.terminal for i in self.informers)
