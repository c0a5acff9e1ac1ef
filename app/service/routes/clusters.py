"""GET /clusters, /clusters/{cluster}, and the /clusters/{cluster}/workloads... twins of the
workload routes (answered by the same functions, for one named cluster)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import streams
from ..bodies import dumps
from ..models import ClusterList, ClusterStatus, LiveInterpretation, WorkloadList
from ..problems import ProblemError
from .common import PROBLEMS, STREAM_RESPONSE, ServiceDep
from .workloads import LIST_DOC, WORKLOAD_DOC, ListDep, one_workload, workload_list

router = APIRouter(tags=["clusters"])


@router.get(
    "/clusters/{cluster}/workloads/{namespace}/{name}",
    operation_id="getClusterWorkload",
    response_model=LiveInterpretation,
    responses={**PROBLEMS, 200: STREAM_RESPONSE},
    description=WORKLOAD_DOC,
    summary="A live workload of one cluster (or, with watch=true, a stream of it)",
)
async def get_cluster_workload(
    cluster: str,
    namespace: str,
    name: str,
    request: Request,
    service: ServiceDep,
    kind: str | None = None,
    apiVersion: str | None = None,
    pods: bool = True,
    watch: bool = False,
    resumeFrom: str | None = None,
) -> Response:
    return await one_workload(service, request, cluster, namespace, name, kind, apiVersion, pods, watch)


@router.get(
    "/clusters/{cluster}/workloads",
    operation_id="listClusterWorkloads",
    response_model=WorkloadList,
    description=LIST_DOC,
    responses={**PROBLEMS, 200: STREAM_RESPONSE},
    summary="The workloads of one cluster (or, with watch=true, a stream of rows)",
)
async def list_cluster_workloads(cluster: str, request: Request, service: ServiceDep, p: ListDep) -> Response:
    return await workload_list(service, request, cluster, p.namespace, p.kind, p.watch, p.query(cluster))


@router.get(
    "/clusters",
    operation_id="listClusters",
    response_model=ClusterList,
    responses={**PROBLEMS, 200: STREAM_RESPONSE},
    summary="Every cluster the service reads: server, version, sync state, last error, workloads, GPUs",
)
async def list_clusters(
    request: Request, service: ServiceDep, watch: bool = False, resumeFrom: str | None = None
) -> Response:
    """`watch=true`: the clusters as ADDED events, then an event each time one changes (it goes
    down or comes back, syncs, its counts change), as the workload streams frame them."""
    fleet = service.need_cluster("clusters").fleet
    await service.auth.require_path(request.scope["state"], "/clusters")
    service.need_store()
    if watch:
        return await streams.cluster_stream(service.streams, request, fleet)
    return dumps({"items": fleet.items()})


@router.get(
    "/clusters/{cluster}",
    operation_id="getCluster",
    response_model=ClusterStatus,
    responses=PROBLEMS,
    summary="One cluster",
)
async def get_cluster(cluster: str, request: Request, service: ServiceDep) -> Response:
    fleet = service.need_cluster("clusters").fleet
    await service.auth.require_path(request.scope["state"], "/clusters")
    service.need_store()
    item = next((i for i in fleet.items() if i["name"] == cluster), None)
    if item is None:
        raise ProblemError(
            404, "cluster-not-found", "Cluster not found", f"no cluster named {cluster!r} (GET /clusters lists them)"
        )
    return dumps(item)
