"""The service's cluster side: the home cluster's services and the fleet of clusters it reads.

The home cluster (`--kubeconfig`, or the pod's service account) is where definitions come from
(ConfigMaps, Karta resources), where callers' tokens are reviewed, and where cluster Secrets
are watched.  Every cluster served, the home one included, is a member of the fleet with its
own connection, live model and access checks (app/fleet).  The API server may be down at start:
the built-in catalog and folders are served meanwhile, the watchers keep retrying, and /readyz
turns ready after their first sync.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..cluster.access import Access
from ..cluster.informer import cancel_all
from ..cluster.karta_status import KartaStatusManager
from ..cluster.kube import Kube, kubeconfig_namespace, pod_namespace
from ..cluster.sources import ConfigMapSource, KartaSource, WatchedSource
from ..cluster.workloads import Interpret, Workloads
from ..fleet import specs
from ..fleet.fleet import Fleet
from ..fleet.member import Member
from ..karta.store import DefinitionStore
from ..model.live import LiveModel
from ..model.protocol import ClusterModel
from .settings import Settings, auth_mode, fleet_mode

if TYPE_CHECKING:
    from .sharing import Sharing

log = logging.getLogger("wlmap.cluster")


def service_namespace(s: Settings) -> str:
    """--namespace, else the pod's, else the kubeconfig context's, else `default`."""
    return s.namespace or pod_namespace() or kubeconfig_namespace(s.kubeconfig) or "default"


class Cluster:
    def __init__(
        self,
        kube: Kube | None,
        store: DefinitionStore,
        settings: Settings,
        interpret: Interpret,
        home: specs.ClusterSpec | None,
        others: list[specs.ClusterSpec],
    ):
        self.kube, self.store, self.settings = kube, store, settings
        self.namespace = service_namespace(settings)
        self.sources: list[WatchedSource] = []
        self.karta_manager: KartaStatusManager | None = None
        if kube is not None:
            if settings.karta_resources:
                kartas = KartaSource(kube, store)
                self.sources.append(kartas)
                if settings.manage_kartas:
                    self.karta_manager = KartaStatusManager(kube, kartas, store, self.namespace)
            elif settings.manage_kartas:
                log.warning("--manage-kartas needs --karta-resources true: Karta status is not written")
            self.sources.append(
                ConfigMapSource(
                    kube, store, self.namespace, name=settings.configmap_name, selector=settings.configmap_selector
                )
            )
        auth = auth_mode(settings) == "kubernetes"
        # Tokens are reviewed by the home cluster; each read is authorized by its own cluster.
        self.access = Access(kube, audiences=settings.token_audiences) if auth and kube is not None else None
        # Behind a store (--store), reads come from it (every role) and shards watch what they
        # claim (--role shard|all): app/store.
        self.sharing: Sharing | None = None
        if settings.store:  # (the Redis client is loaded only then)
            from .sharing import Sharing

            self.sharing = Sharing(settings, kube, self.namespace, lambda: store.registry, interpret)
        self.fleet = Fleet(
            lambda: store.registry,
            interpret,
            cache=settings.cache,
            namespaces=settings.watch_namespaces,
            auth=auth,
            labelled=fleet_mode(settings),
            probe_interval=settings.cluster_probe_interval,
            secret_allow_insecure=settings.cluster_secret_allow_insecure,
            **(self.sharing.fleet_options() if self.sharing else {}),
        )
        if self.sharing is not None:
            self.sharing.attach(self.fleet)
        if home is not None and kube is not None:
            self.fleet.add(home, kube, home=True)
        for spec in others:
            self.fleet.add(spec)
        fleet = self.fleet
        store.listeners.append(lambda _state: fleet.definitions_changed())
        self._tasks: list[asyncio.Task[None]] = []

    # The home cluster's model and direct reads (the single-cluster service reads only these).
    @property
    def home(self) -> Member | None:
        return self.fleet.home

    @property
    def model(self) -> ClusterModel | None:
        return self.fleet.home.model if self.fleet.home is not None else None

    @property
    def workloads(self) -> Workloads | None:
        return self.fleet.home.workloads if self.fleet.home is not None else None

    def live_models(self) -> list[LiveModel]:
        """Every model this process keeps from watches: the fleet's, and a shard's (--role shard|all)."""
        models = [m.model for m in self.fleet.members.values() if isinstance(m.model, LiveModel)]
        shard = self.sharing.shard if self.sharing is not None else None
        return models + ([p.model for p in shard.parts.values() if p.model is not None] if shard is not None else [])

    @staticmethod
    def source_keys(settings: Settings) -> list[str]:
        from ..karta.store import CLUSTER, CONFIGMAP

        return ([CLUSTER] if settings.karta_resources else []) + [CONFIGMAP]

    @classmethod
    async def connect(cls, store: DefinitionStore, settings: Settings, interpret: Interpret) -> Cluster:
        home, others = settings.cluster_specs()  # computed once, when the settings were checked
        kube = await Kube.connect(settings.kubeconfig) if home is not None else None
        return cls(kube, store, settings, interpret, home, others)

    def start(self, stop: asyncio.Event) -> None:
        for src in self.sources:
            self._tasks.append(asyncio.create_task(src.run(stop), name=f"watch-{src.key}"))
        if self.karta_manager is not None:
            self._tasks.append(self.karta_manager.start(stop))
        watch = self.settings.cluster_secrets or bool(self.settings.cluster_secret_names)
        self.fleet.start(
            stop,
            self.namespace if watch else None,
            self.settings.cluster_secret_selector,
            self.settings.cluster_secret_names,
        )
        if self.sharing is not None:
            self.sharing.start(stop)  # its tasks are its own: Sharing.close ends them

    async def close(self) -> None:
        if self.karta_manager is not None:
            await self.karta_manager.close()  # the Lease is released before the connection closes
        if self.sharing is not None:  # shards stop (and give their Leases back) before connections close
            await self.sharing.close()
        await self.fleet.close()
        await cancel_all(self._tasks)
        if self.kube is not None:
            await self.kube.close()

    def source_status(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [
            {
                "name": s.key,
                "state": s.state,
                "error": s.error,
                "resourceVersion": s.resource_version,
                "objects": len(s.objects),
                "relists": s.relists,
                "reconnects": s.reconnects,
            }
            for s in self.sources
        ]
        if self.karta_manager is not None:
            out[0]["kartaManager"] = self.karta_manager.status()  # the Karta source comes first
        return out
