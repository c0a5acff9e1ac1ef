"""Series read at scrape time from the engine, the definition store and the clusters."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..engine import compiled as compiled_cache
from ..karta.store import DefinitionStore
from . import metrics
from .service import Service


class _StateCollector:
    """Counters kept by the engine and the definition store, read at scrape time."""

    def __init__(self) -> None:
        self.store: DefinitionStore | None = None
        self.service: Service | None = None

    def collect(self) -> Any:
        c = CounterMetricFamily("wlmap_compile_cache", "Compiled-definition cache lookups (in-process)",
                                labels=["result"])
        c.add_metric(["hit"], compiled_cache.stats["hits"])
        c.add_metric(["miss"], compiled_cache.stats["misses"])
        yield c
        if self.store is not None:
            r = CounterMetricFamily("wlmap_definition_reloads", "Definition source reloads, by result",
                                    labels=["result"])
            r.add_metric(["ok"], self.store.reloads["ok"])
            r.add_metric(["failed"], self.store.reloads["failed"])
            yield r
        cluster = self.service.cluster if self.service is not None else None
        if cluster is not None:
            d = CounterMetricFamily("wlmap_discovery_fetches", "API discovery documents fetched (misses are cached, "
                                    "so unknown kinds cannot cause discovery storms)")
            d.add_metric([], sum(m.kube.discovery.fetches for m in cluster.fleet.members.values()
                                 if m.kube is not None))
            yield d
            up = GaugeMetricFamily("wlmap_cluster_available", "1 when the cluster's API server answered the last "
                                   "probe", labels=["cluster"])
            synced = GaugeMetricFamily("wlmap_cluster_synced", "1 when the cluster's live model has synced",
                                       labels=["cluster"])
            for m in cluster.fleet.members.values():
                up.add_metric([m.name], 1 if m.available else 0)
                synced.add_metric([m.name], 1 if m.synced else 0)
            yield up
            yield synced
            if cluster.sharing is not None:
                yield from cluster.sharing.metrics()


STATE = _StateCollector()
metrics.REGISTRY.register(STATE)

