"""Prometheus metrics of one service process (scale out with replicas, one worker each)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

REQUESTS = Histogram("wlmap_http_request_duration_seconds", "HTTP request latency", ["route", "method", "status"],
                     registry=REGISTRY,
                     buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
INTERPRETATIONS = Counter("wlmap_interpretations_total", "Interpretations by definition and primary phase",
                          ["definition", "phase"], registry=REGISTRY)
PARTIAL_PARTS = Counter("wlmap_interpretation_failed_parts_total",
                        "Parts (status, component, gang) that could not be computed in interpretations that were "
                        "still answered (complete: false)", ["definition", "part"], registry=REGISTRY)
INTERPRETATION_ERRORS = Counter("wlmap_interpretation_errors_total", "Interpretations that failed, by reason",
                                ["definition", "reason"], registry=REGISTRY)
DEADLINE_HITS = Counter("wlmap_evaluation_deadline_exceeded_total", "Evaluations cut at the deadline",
                        ["definition"], registry=REGISTRY)
WORKER_RESTARTS = Counter("wlmap_evaluation_worker_restarts_total", "Evaluation workers replaced",
                          registry=REGISTRY)
DEFINITIONS = Gauge("wlmap_definitions", "Definitions known, by state", ["state"], registry=REGISTRY)
WORKER_RETRIES = Counter("wlmap_evaluation_retries_total", "Evaluations run again after their worker died",
                         registry=REGISTRY)
WORKER_QUEUE_TIMEOUTS = Counter("wlmap_evaluation_queue_timeouts_total",
                                "Evaluations refused (503) because no worker became free within --eval-queue-timeout",
                                registry=REGISTRY)
