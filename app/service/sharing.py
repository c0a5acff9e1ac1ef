"""The service's parts behind a store, chosen by --role: what reads from it, what writes to it.

Every role reads from the store: each cluster of the fleet is a `StoreModel` (reads.py) fed by
one `StoreHub` (mirror.py).  Roles `shard` and `all` also run a `Shard` (shard.py): it claims
units with Leases in the service namespace (claims.py) and writes what it watches.  Role `api`
watches nothing and holds no Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..cluster.informer import cancel_all
from ..cluster.kube import Kube
from ..cluster.workloads import Interpret
from ..fleet.fleet import Fleet
from ..fleet.member import Member
from ..karta.registry import Registry
from ..store.connection import connect
from ..store.mirror import StoreHub
from ..store.reads import StoreModel
from ..store.shard import Shard
from .settings import Settings, fleet_mode


def claims_group(url: str) -> str:
    """The shards that share a store share their Leases' group, whatever else runs in the
    namespace (two installs with two stores never take each other's clusters); the password is
    not part of it."""
    u = urlsplit(url)
    where = f"{u.scheme}://{u.hostname or ''}:{u.port or ''}{u.path}"
    return "wlmap-" + hashlib.blake2b(where.encode(), digest_size=5).hexdigest()


class Sharing:
    def __init__(
        self,
        settings: Settings,
        home: Kube | None,
        namespace: str,
        registry: Callable[[], Registry],
        interpret: Interpret,
    ):
        assert settings.store
        self.store_url = settings.store
        self.settings, self.home, self.namespace = settings, home, namespace
        self.registry, self.interpret = registry, interpret
        self.labelled = fleet_mode(settings)
        self.redis = connect(settings.store, settings.store_password)
        self.hub = StoreHub(self.redis, buckets=settings.shard_buckets, labelled=self.labelled)
        self.shard: Shard | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def role(self) -> str:
        return self.settings.role

    def fleet_options(self) -> dict[str, Any]:
        return {"events": self.hub.log, "model_factory": self.model_for}

    def model_for(self, member: Member) -> StoreModel:
        return StoreModel(
            self.hub,
            member.name,
            self.registry,
            self.interpret,
            self.labelled,
            member.kube.host if member.kube is not None else None,
        )

    def attach(self, fleet: Fleet) -> None:
        if self.role in ("shard", "all"):
            from ..store.claims import Claims

            assert self.home is not None  # Settings.check: shards need a home cluster for their Leases
            claims = Claims(
                self.home,
                self.namespace,
                group=claims_group(self.store_url),
                lease_seconds=self.settings.shard_lease,
            )
            self.shard = Shard(
                fleet,
                self.redis,
                claims,
                self.registry,
                self.interpret,
                buckets=self.settings.shard_buckets,
                maxlen=self.settings.store_stream_length,
                namespaces=self.settings.watch_namespaces or None,
                labelled=self.labelled,
            )

    def start(self, stop: asyncio.Event) -> None:
        self._tasks.append(asyncio.create_task(self.hub.run(stop), name="store-hub"))
        if self.shard is not None:
            self._tasks.append(asyncio.create_task(self.shard.run(stop), name="shard"))

    async def close(self) -> None:
        await cancel_all(self._tasks)
        with contextlib.suppress(Exception):
            await self.redis.aclose()

    def metrics(self) -> Iterator[Any]:
        """Prometheus families: is the store reachable, and (a shard) what it owns and has written."""
        up = GaugeMetricFamily("wlmap_store_connected", "1 while the store answers (else reads are 503)")
        up.add_metric([], 1 if self.hub.connected else 0)
        yield up
        if self.shard is not None:
            units = GaugeMetricFamily("wlmap_shard_units", "Units (clusters or namespace buckets) this shard owns")
            units.add_metric([], len(self.shard.claims.owned))
            yield units
            writes = CounterMetricFamily(
                "wlmap_shard_store_writes", "Fenced writes to the store, by cluster", labels=["cluster"]
            )
            for name, p in sorted(self.shard.parts.items()):
                writes.add_metric([name], p.writes)
            yield writes

    def status(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "storeConnected": self.hub.connected,
            "storeError": self.hub.error,
            "resumeToken": self.hub.log.token(),
            **({"shard": self.shard.status()} if self.shard is not None else {}),
        }
