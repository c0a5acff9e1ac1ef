"""GET /metrics/workloads: per-workload series from the live model, kube-state-metrics style.

Kept apart from /metrics (the service's own health), because it grows with the cluster.  One
custom collector reads the model's published rows and the facts kept with them; the text is
rendered once per model change (a scrape of an unchanged model costs a lookup).  With several
clusters, every series has a `cluster` label, and one text covers every cluster's model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..engine.quantity import QuantityError, parse_quantity
from ..model.protocol import ClusterModel

PHASES = [
    "Initializing",
    "Running",
    "Completed",
    "Failed",
    "Degraded",
    "Suspended",
    "Suspending",
    "Resuming",
    "Undefined",
]
LABELS = ["namespace", "group", "kind", "name"]


def _number(resource: str, value: str) -> float | None:
    """GPUs and other counts as numbers, CPU in cores, memory in bytes (Kubernetes quantities)."""
    try:
        q = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return None
    return float(q.amount)


Rows = list[tuple[dict[str, Any], dict[str, Any] | None]]


class WorkloadCollector(Collector):
    """The series of the given rows (all of the model's by default)."""

    def __init__(self, model: ClusterModel | None, rows: Rows | None = None, labelled: bool = False):
        self.model, self._rows, self.labelled = model, rows, labelled

    def collect(self) -> Iterator[GaugeMetricFamily]:
        names = (["cluster"] if self.labelled else []) + LABELS
        info = GaugeMetricFamily(
            "wlmap_workload_info",
            "One series per workload the model holds: its definition",
            labels=names + ["definition"],
        )
        phase = GaugeMetricFamily(
            "wlmap_workload_phase", "1 for the workload's current phase, 0 for the others", labels=names + ["phase"]
        )
        desired = GaugeMetricFamily(
            "wlmap_workload_pods_desired", "Pods the workload wants (desired scale)", labels=names
        )
        ready = GaugeMetricFamily(
            "wlmap_workload_pods_ready", "Pods owned by the workload whose Ready condition is True", labels=names
        )
        requests = GaugeMetricFamily(
            "wlmap_workload_resource_requests",
            "Resources the workload requests at its "
            "desired scale (accelerators as a count, CPU in cores, memory in bytes)",
            labels=names + ["resource"],
        )
        gpus = GaugeMetricFamily(
            "wlmap_workload_gpus",
            "Whole GPU devices the workload requests at its desired "
            "scale, every vendor (--gpu-resource; MIG slices are not whole devices)",
            labels=names,
        )
        gang = GaugeMetricFamily(
            "wlmap_workload_gang_min_available",
            "The gang minimum (pods that must start together), for definitions with gang instructions",
            labels=names,
        )
        rows = self._rows if self._rows is not None else (self.model.rows() if self.model is not None else [])
        for row, facts in rows:
            w = row["workload"]
            labels = ([str(row.get("cluster") or "")] if self.labelled else []) + [
                str(w.get("namespace") or ""),
                str(w.get("apiVersion") or "").rpartition("/")[0],
                str(w.get("kind") or ""),
                str(w.get("name") or ""),
            ]
            info.add_metric(labels + [str(row.get("definition") or "")], 1)
            current = row.get("phase")
            for p in PHASES:
                phase.add_metric(labels + [p], 1 if p == current else 0)
            pods = row.get("pods") or {}
            if pods.get("desired") is not None:
                desired.add_metric(labels, pods["desired"])
            if pods.get("ready") is not None:
                ready.add_metric(labels, pods["ready"])
            if row.get("gpus") is not None:
                gpus.add_metric(labels, row["gpus"])
            for res, n in requested(facts):
                requests.add_metric(labels + [res], n)
            if facts and facts.get("gangMin") is not None:
                gang.add_metric(labels, facts["gangMin"])
        yield from (info, phase, desired, ready, requests, gpus, gang)


def requested(facts: dict[str, Any] | None) -> list[tuple[str, float]]:
    """(resource, amount) of a workload's desired totals, computed once per interpretation."""
    if not facts:
        return []
    hit = facts.get("_requested")
    if hit is not None:
        return hit
    totals = (facts.get("result") or {}).get("totals")
    out: list[tuple[str, float]] = []
    if totals:
        reqs: dict[str, Any] = dict(totals.get("requests") or {})
        reqs.setdefault("nvidia.com/gpu", "0")  # always a series: dashboards sum it
        counts = totals.get("accelerators") or {}
        for res in sorted(reqs):
            # an accelerator as its integer count (a pod's 500m GPU is one device), like `accelerators`
            n = float(counts[res]) if res in counts else _number(res, str(reqs[res]))
            if n is not None:
                out.append((res, n))
    facts["_requested"] = out
    return out


FAMILIES = [
    "wlmap_workload_info",
    "wlmap_workload_phase",
    "wlmap_workload_pods_desired",
    "wlmap_workload_pods_ready",
    "wlmap_workload_resource_requests",
    "wlmap_workload_gpus",
    "wlmap_workload_gang_min_available",
]


class WorkloadMetrics:
    """The exposition text of the models (one per cluster).  prometheus-client renders each
    workload's lines (its escaping and number formatting), and they are kept until that workload's
    row or facts change: a scrape re-renders only what changed since the last one, then joins the
    families."""

    def __init__(self, models: Callable[[], list[ClusterModel]], labelled: bool = False):
        self.models, self.labelled = models, labelled
        self._headers = self._render([])  # HELP and TYPE lines of every family
        self._lines: dict[int, tuple[dict[str, Any], Any, dict[str, str]]] = {}
        self._cached: tuple[tuple[Any, ...], bytes] | None = None

    def _render(self, rows: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, str]:
        reg = CollectorRegistry(auto_describe=False)
        reg.register(WorkloadCollector(None, rows, self.labelled))
        out: dict[str, list[str]] = {f: [] for f in FAMILIES}
        for line in generate_latest(reg).decode().splitlines(keepends=True):
            name = line.split(" ", 3)[2] if line.startswith("#") else line.split("{", 1)[0].split(" ", 1)[0]
            out[name].append(line)
        return {f: "".join(lines) for f, lines in out.items()}  # one string per family: kept per workload

    async def warm(self, every: int = 200) -> None:
        """Render each workload's lines ahead of the first scrape, yielding to the event loop
        between chunks: ~0.1 ms a workload, so a model of 10,000 workloads rendered at once would
        hold the loop (and the changes arriving) for a second."""
        rows = [x for m in self.models() for x in m.rows()]
        for i, (row, facts) in enumerate(rows):
            self._lines[id(row)] = self._line(row, facts)
            if i % every == every - 1:
                await asyncio.sleep(0)

    def _line(self, row: dict[str, Any], facts: Any) -> tuple[dict[str, Any], Any, dict[str, str]]:
        """A workload's lines: as rendered before while its row and facts are the same objects
        (rows and facts are replaced, never edited), else rendered now."""
        hit = self._lines.get(id(row))
        if hit is None or hit[0] is not row or hit[1] is not facts:
            hit = (row, facts, self._render([(row, facts)]))
        return hit

    def render(self) -> bytes:
        models = self.models()
        version = tuple((id(m), m.events.seq, len(m.states)) for m in models)
        if self._cached is not None and self._cached[0] == version:
            return self._cached[1]
        fresh: dict[int, tuple[dict[str, Any], Any, dict[str, str]]] = {}
        for row, facts in (x for m in models for x in m.rows()):
            fresh[id(row)] = self._line(row, facts)
        self._lines = fresh
        parts: list[str] = []
        for f in FAMILIES:
            parts.append(self._headers[f])
            parts += (lines[f] for _, _, lines in fresh.values())
        self._cached = (version, "".join(parts).encode())
        return self._cached[1]
