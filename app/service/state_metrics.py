"""Series read at scrape time from the engine, the definition store and the clusters."""

from __future__ import annotations

from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..engine import compiled as compiled_cache
from .service import Service


class StateCollector:
    """Counters kept by the engine, the definition store and the clusters of one service, read
    at scrape time (wiring.build registers it on the service's registry)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Any:
        c = CounterMetricFamily(
            "wlmap_compile_cache", "Compiled-definition cache lookups (in-process)", labels=["result"]
        )
        c.add_metric(["hit"], compiled_cache.stats["hits"])
        c.add_metric(["miss"], compiled_cache.stats["misses"])
        yield c
        store = self.service.store
        r = CounterMetricFamily("wlmap_definition_reloads", "Definition source reloads, by result", labels=["result"])
        r.add_metric(["ok"], store.reloads["ok"])
        r.add_metric(["failed"], store.reloads["failed"])
        yield r
        cluster = self.service.cluster
        if cluster is not None:
            d = CounterMetricFamily(
                "wlmap_discovery_fetches",
                "API discovery documents fetched (misses are cached, so unknown kinds cannot cause discovery storms)",
            )
            d.add_metric(
                [], sum(m.kube.discovery.fetches for m in cluster.fleet.members.values() if m.kube is not None)
            )
            yield d
            up = GaugeMetricFamily(
                "wlmap_cluster_available", "1 when the cluster's API server answered the last probe", labels=["cluster"]
            )
            synced = GaugeMetricFamily(
                "wlmap_cluster_synced", "1 when the cluster's live model has synced", labels=["cluster"]
            )
            for m in cluster.fleet.members.values():
                up.add_metric([m.name], 1 if m.available else 0)
                synced.add_metric([m.name], 1 if m.synced else 0)
            yield up
            yield synced
            if cluster.sharing is not None:
                yield from cluster.sharing.metrics()
