"""GET /clusters, /clusters/{cluster}, and the /clusters/{cluster}/workloads... twins of the
workload routes (answered by the same functions, for one named cluster)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from .. import capacity, streams
from ..bodies import dumps
from ..consumer_formats import FORMAT_DOC, format_param
from ..models import ClusterList, ClusterStatus, LiveInterpretation, NodeList, WorkloadList
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
    format: str | None = Query(None, description=FORMAT_DOC),
) -> Response:
    fmt = format_param(format)
    return await one_workload(service, request, cluster, namespace, name, kind, apiVersion, pods, watch, fmt)


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
    summary="Every cluster the service reads: server, version, sync state, last error, workloads, GPUs, capacity",
)
async def list_clusters(
    request: Request, service: ServiceDep, watch: bool = False, resumeFrom: str | None = None
) -> Response:
    """`capacity`: nodes, allocatable / requested / free per resource and per node pool, given only
    where the caller may `list nodes` (else `state: forbidden` and no figure).

    `watch=true`: the clusters as ADDED events, then an event each time one changes (it goes
    down or comes back, syncs, its counts change), as the workload streams frame them; events
    carry no `capacity`."""
    fleet = service.need_cluster("clusters").fleet
    state = request.scope["state"]
    await service.auth.require_path(state, "/clusters")
    service.need_store()
    if watch:
        return await streams.cluster_stream(service.streams, request, fleet)
    items = await capacity.add_to_items(
        fleet.items(), fleet.members, lambda m: service.auth.rights(state, m), service.settings.pool_labels
    )
    return dumps({"items": items})


@router.get(
    "/clusters/{cluster}",
    operation_id="getCluster",
    response_model=ClusterStatus,
    responses=PROBLEMS,
    summary="One cluster",
)
async def get_cluster(cluster: str, request: Request, service: ServiceDep) -> Response:
    """`capacity` as in GET /clusters."""
    fleet = service.need_cluster("clusters").fleet
    state = request.scope["state"]
    await service.auth.require_path(state, "/clusters")
    service.need_store()
    item = next((i for i in fleet.items() if i["name"] == cluster), None)
    if item is None:
        raise ProblemError(
            404, "cluster-not-found", "Cluster not found", f"no cluster named {cluster!r} (GET /clusters lists them)"
        )
    (item,) = await capacity.add_to_items(
        [item], fleet.members, lambda m: service.auth.rights(state, m), service.settings.pool_labels
    )
    return dumps(item)


@router.get(
    "/clusters/{cluster}/nodes",
    operation_id="listClusterNodes",
    response_model=NodeList,
    responses=PROBLEMS,
    summary="The nodes of one cluster with their allocatable, requested and free resources",
)
async def list_cluster_nodes(
    cluster: str,
    request: Request,
    service: ServiceDep,
    labelSelector: str | None = None,
    limit: int | None = None,
    continue_: str | None = Query(None, alias="continue"),
) -> Response:
    """Each node (matching `labelSelector`, Kubernetes syntax on the node's labels), sorted by
    name, with the figures of `capacity` (integers: `cpu` in millicores, memory-like resources in
    bytes, other resources as counts; `requested.pods` and `pods`: bound pods), from the live
    model.  Pages: `limit=` (1..5000) with the answer's `metadata.continue` as `continue=` (an
    opaque token of the last name given: paging by name, stable while nodes come and go).

    Needs the caller's right to `list nodes` in that cluster (403 without it, asked before
    anything is read); 503 with Retry-After while the inventory is starting or unavailable
    (`--cache false`, the service may not list nodes)."""
    member = service.member(cluster, "nodes")
    if not await capacity.may_list_nodes(service.auth.rights(request.scope["state"], member)):
        raise ProblemError(403, "forbidden", "Forbidden", capacity.MAY_NOT_LIST)
    return dumps(await capacity.node_page(member, labelSelector, limit, continue_, service.settings.pool_labels))
