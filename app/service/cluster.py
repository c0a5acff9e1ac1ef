"""The service's cluster side: one API connection, the definition watchers, live workloads, access.

Started in the app's lifespan when a kubeconfig is given or the service runs in a pod.  The
API server may be down at start: the built-in catalog and folders are served meanwhile, the
watchers keep retrying, and /readyz turns ready after their first sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ..cluster.access import Access
from ..cluster.kube import Kube, kubeconfig_namespace, pod_namespace
from ..cluster.sources import ConfigMapSource, KartaSource, WatchedSource
from ..cluster.workloads import Interpret, Workloads
from ..karta.store import DefinitionStore
from ..model.live import LiveModel
from .settings import Settings, auth_mode

log = logging.getLogger("wlmap.cluster")


def service_namespace(s: Settings) -> str:
    """--namespace, else the pod's, else the kubeconfig context's, else `default`."""
    return s.namespace or pod_namespace() or kubeconfig_namespace(s.kubeconfig) or "default"


class Cluster:
    def __init__(self, kube: Kube, store: DefinitionStore, settings: Settings, interpret: Interpret):
        self.kube, self.store, self.settings = kube, store, settings
        self.namespace = service_namespace(settings)
        self.sources: list[WatchedSource] = []
        if settings.karta_resources:
            self.sources.append(KartaSource(kube, store))
        self.sources.append(ConfigMapSource(kube, store, self.namespace, name=settings.configmap_name,
                                            selector=settings.configmap_selector))
        self.workloads = Workloads(kube, lambda: store.registry, interpret)
        # The live model (--cache true): reads come from memory once it is synced.
        self.model: LiveModel | None = None
        if settings.cache:
            self.model = LiveModel(kube, lambda: store.registry, interpret, namespaces=settings.watch_namespaces)
            model = self.model
            store.listeners.append(lambda _state: model.definitions_changed())
        self.access = Access(kube) if auth_mode(settings) == "kubernetes" else None
        self._tasks: list[asyncio.Task[None]] = []

    @staticmethod
    def source_keys(settings: Settings) -> list[str]:
        from ..karta.store import CLUSTER, CONFIGMAP

        return ([CLUSTER] if settings.karta_resources else []) + [CONFIGMAP]

    @classmethod
    async def connect(cls, store: DefinitionStore, settings: Settings, interpret: Interpret) -> Cluster:
        kube = await Kube.connect(settings.kubeconfig)
        return cls(kube, store, settings, interpret)

    def start(self, stop: asyncio.Event) -> None:
        for src in self.sources:
            self._tasks.append(asyncio.create_task(src.run(stop), name=f"watch-{src.key}"))
        if self.model is not None:
            self.model.start(stop)

    async def close(self) -> None:
        if self.model is not None:
            await self.model.close()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await self.kube.close()

    def source_status(self) -> list[dict[str, Any]]:
        return [{"name": s.key, "state": s.state, "error": s.error, "resourceVersion": s.resource_version,
                 "objects": len(s.objects), "relists": s.relists, "reconnects": s.reconnects} for s in self.sources]
