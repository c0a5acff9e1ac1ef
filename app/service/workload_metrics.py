"""GET /metrics/workloads: per-workload series from the live model, kube-state-metrics style.

Kept apart from /metrics (the service's own health), because it grows with the cluster.  One
custom collector reads the model's published rows and the facts kept with them; the text is
rendered once per model change (a scrape of an unchanged model costs a lookup).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..engine.quantity import QuantityError, parse_quantity
from ..model.live import LiveModel

PHASES = ["Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming",
          "Undefined"]
LABELS = ["namespace", "group", "kind", "name"]


def _number(resource: str, value: str) -> float | None:
    """GPUs and other counts as numbers, CPU in cores, memory in bytes (Kubernetes quantities)."""
    try:
        q = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return None
    return float(q.amount)


class WorkloadCollector(Collector):
    def __init__(self, model: LiveModel):
        self.model = model

    def collect(self) -> Iterator[GaugeMetricFamily]:
        info = GaugeMetricFamily("wlmap_workload_info", "One series per workload the model holds: its definition",
                                 labels=LABELS + ["definition"])
        phase = GaugeMetricFamily("wlmap_workload_phase", "1 for the workload's current phase, 0 for the others",
                                  labels=LABELS + ["phase"])
        desired = GaugeMetricFamily("wlmap_workload_pods_desired", "Pods the workload wants (desired scale)",
                                    labels=LABELS)
        ready = GaugeMetricFamily("wlmap_workload_pods_ready", "Pods owned by the workload whose Ready condition "
                                                               "is True", labels=LABELS)
        requests = GaugeMetricFamily("wlmap_workload_resource_requests", "Resources the workload requests at its "
                                     "desired scale (GPUs as a count, CPU in cores, memory in bytes)",
                                     labels=LABELS + ["resource"])
        gang = GaugeMetricFamily("wlmap_workload_gang_min_available", "The gang minimum (pods that must start "
                                 "together), for definitions with gang instructions", labels=LABELS)
        for row, facts in self.model.rows():
            w = row["workload"]
            labels = [str(w.get("namespace") or ""), str(w.get("apiVersion") or "").rpartition("/")[0],
                      str(w.get("kind") or ""), str(w.get("name") or "")]
            info.add_metric(labels + [str(row.get("definition") or "")], 1)
            current = row.get("phase")
            for p in PHASES:
                phase.add_metric(labels + [p], 1 if p == current else 0)
            pods = row.get("pods") or {}
            if pods.get("desired") is not None:
                desired.add_metric(labels, pods["desired"])
            if pods.get("ready") is not None:
                ready.add_metric(labels, pods["ready"])
            totals = ((facts or {}).get("result") or {}).get("totals")
            if totals:
                reqs: dict[str, Any] = dict(totals.get("requests") or {})
                reqs.setdefault("nvidia.com/gpu", str(totals.get("gpus") or 0))
                for res in sorted(reqs):
                    n = float(totals["gpus"]) if res == "nvidia.com/gpu" else _number(res, str(reqs[res]))
                    if n is not None:
                        requests.add_metric(labels + [res], n)
            if facts and facts.get("gangMin") is not None:
                gang.add_metric(labels, facts["gangMin"])
        yield from (info, phase, desired, ready, requests, gang)


class WorkloadMetrics:
    """The exposition text of one model, rendered again only when the model changed."""

    def __init__(self, model: LiveModel):
        self.model = model
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(WorkloadCollector(model))
        self._cached: tuple[tuple[int, int], bytes] | None = None

    def render(self) -> bytes:
        version = (self.model.events.seq, len(self.model.states))
        if self._cached is None or self._cached[0] != version:
            self._cached = (version, generate_latest(self.registry))
        return self._cached[1]
