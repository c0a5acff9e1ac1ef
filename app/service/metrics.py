"""Prometheus metrics of one service process (scale out with replicas, one worker each).

A Metrics holds its own registry: wiring.build makes one per service and passes it to whoever
counts (the service, the middleware, the evaluator), so no series is registered at import."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Histogram(
            "wlmap_http_request_duration_seconds",
            "HTTP request latency",
            ["route", "method", "status"],
            registry=r,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.interpretations = Counter(
            "wlmap_interpretations_total",
            "Interpretations by definition and primary phase",
            ["definition", "phase"],
            registry=r,
        )
        self.partial_parts = Counter(
            "wlmap_interpretation_failed_parts_total",
            "Parts (status, component, gang) that could not be computed in "
            "interpretations that were still answered (complete: false)",
            ["definition", "part"],
            registry=r,
        )
        self.interpretation_errors = Counter(
            "wlmap_interpretation_errors_total",
            "Interpretations that failed, by reason",
            ["definition", "reason"],
            registry=r,
        )
        self.deadline_hits = Counter(
            "wlmap_evaluation_deadline_exceeded_total", "Evaluations cut at the deadline", ["definition"], registry=r
        )
        self.worker_restarts = Counter(
            "wlmap_evaluation_worker_restarts_total", "Evaluation workers replaced", registry=r
        )
        self.definitions = Gauge("wlmap_definitions", "Definitions known, by state", ["state"], registry=r)
        self.worker_retries = Counter(
            "wlmap_evaluation_retries_total", "Evaluations run again after their worker died", registry=r
        )
        self.worker_queue_timeouts = Counter(
            "wlmap_evaluation_queue_timeouts_total",
            "Evaluations refused (503) because no worker became free within --eval-queue-timeout",
            registry=r,
        )
