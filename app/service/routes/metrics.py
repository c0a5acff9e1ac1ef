"""GET /metrics (the process's series; public: Prometheus has no token) and /metrics/workloads
(one set of series per workload, from the live model)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from .. import capacity
from ..problems import ProblemError
from .common import PROBLEMS, ServiceDep

router = APIRouter(tags=["health"])


@router.get(
    "/metrics/workloads",
    operation_id="workloadMetrics",
    response_class=Response,
    responses={
        200: {
            "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
            "description": "Prometheus text format: one set of series per workload",
        },
        **PROBLEMS,
    },
)
async def workload_metrics(request: Request, service: ServiceDep) -> Response:
    """Per-workload series from the live model (kube-state-metrics style).  With `--auth
    kubernetes` the caller needs `get` on the non-resource URL `/metrics/workloads`.

    Also `wlmap_cluster_allocatable` and `wlmap_cluster_free` per cluster, node pool and resource
    (computed at scrape time), for the clusters where the caller may `list nodes`."""
    service.need_cluster("workload metrics")
    await service.auth.require_path(request.scope["state"], "/metrics/workloads")
    if not service.settings.cache:
        raise ProblemError(
            400,
            "metrics-need-the-model",
            "Workload metrics need the live model",
            "this service reads the API server directly (--cache false)",
        )
    state = request.scope["state"]
    members = sorted(service.need_cluster("workload metrics").fleet.members.values(), key=lambda m: m.name)
    series = await capacity.metric_text(members, lambda m: service.auth.rights(state, m), service.settings.pool_labels)
    return Response(service.metrics_renderer().render() + series, media_type=CONTENT_TYPE_LATEST)


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}, "description": "Prometheus text format"}
    },
)
async def metrics_endpoint(service: ServiceDep) -> Response:
    served, invalid = service.store.counts()
    service.metrics.definitions.labels("served").set(served)
    service.metrics.definitions.labels("invalid").set(invalid)
    return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)
