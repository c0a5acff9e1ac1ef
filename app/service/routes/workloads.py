"""GET /workloads, /workloads/{namespace}/{name}, /fleet/workloads/{namespace}/{name} and /model:
live workloads, read with the caller's rights (the /clusters/{cluster}/... twins in clusters.py
answer through the same functions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from ...cluster.listing import ListQuery, QueryError, parse_query
from ...cluster.reader import LookupFailed
from ...fleet.member import Member
from .. import fleet_reads, no_capacity, streams
from ..bodies import JSON, dumps
from ..consumer_formats import FORMAT_DOC, format_param
from ..errors import lookup_problem
from ..models import FleetWorkload, InterpretRequest, LiveInterpretation, ModelStatus, ObjectRef, WorkloadList
from ..problems import ProblemError
from ..service import Read, Service
from .common import PROBLEMS, STREAM_RESPONSE, ServiceDep

router = APIRouter(tags=["workloads"])


@dataclass(frozen=True)
class ListParams:
    """The query of both workload lists (GET /workloads, /clusters/{c}/workloads), declared once."""

    namespace: str | None
    kind: str | None
    watch: bool
    phase: str | None
    labelSelector: str | None
    minGpus: int | None
    sort: str | None
    limit: int | None
    continue_: str | None

    def query(self, cluster: str | None) -> ListQuery | None:
        """The filters, order and page (None: none asked, the list as it always was); a continue
        token is good only for the namespace, kind and clusters it was made for."""
        if all(
            v is None for v in (self.phase, self.labelSelector, self.minGpus, self.sort, self.limit, self.continue_)
        ):
            return None
        try:
            return parse_query(
                phase=self.phase,
                label_selector=self.labelSelector,
                min_gpus=self.minGpus,
                sort=self.sort,
                limit=self.limit,
                continue_=self.continue_,
                scope=(self.namespace, self.kind, cluster),
            )
        except QueryError as e:
            raise ProblemError(400, "invalid-list-query", "Invalid list query", str(e)) from None


async def list_params(  # async: see service_dependency
    namespace: str | None = None,
    kind: str | None = None,
    watch: bool = False,
    resumeFrom: str | None = None,
    phase: str | None = None,
    labelSelector: str | None = None,
    minGpus: int | None = None,
    sort: str | None = None,
    limit: int | None = None,
    continue_: str | None = Query(None, alias="continue"),
) -> ListParams:
    # resumeFrom is read by the stream from the request itself; declared here for the schema
    return ListParams(namespace, kind, watch, phase, labelSelector, minGpus, sort, limit, continue_)


ListDep = Annotated[ListParams, Depends(list_params)]


WORKLOAD_DOC = """Without `kind`, every kind with a definition is looked up (404 when none has the name,
        409 listing the candidates when several do).  `kind` takes a Kind, a plural, or either
        qualified by group (`jobsets.jobset.x-k8s.io`).  Pods are those owned by the workload
        through the controller owner-reference chain, placed on components and instances;
        `pods=false` skips them (and the pods `list` permission they need).  Answers come from the
        live model once it is synced (`freshness` says from where, and as of when).

        `watch=true`: a stream of the full interpretation (with `live`), an event each time its
        phase, readiness, totals, gang or pods change: Server-Sent Events with `Accept:
        text/event-stream`, else newline-delimited JSON; `Last-Event-ID` (or `resumeFrom`) resumes."""

LIST_DOC = """Top-level workloads (objects controlled by another known workload are left out) in a
        namespace, or in all namespaces without `namespace`.  Kinds the caller may not list are
        left out and named in `warnings`.  With several clusters: every cluster's rows (each with
        `cluster`), or those of `cluster` (comma-separated names); a cluster that does not answer
        keeps its rows as last seen, marked `unavailable`, and only a request naming it fails (503).

        Filters, order and pages: `phase=Running,Failed`, `labelSelector=` (Kubernetes syntax, on the
        workload's labels), `minGpus=`, `sort=namespace | name | -gpus | gpus | age | -age | phase |
        -phase` (`age`: youngest first), `limit=` with the `metadata.continue` token of the answer as
        `continue=` for the next page (paging by key: stable while rows come and go).

        `watch=true`: the current rows as ADDED events, a BOOKMARK with `initialEventsEnd`, then an
        ADDED / MODIFIED / DELETED event for every row that changes (phase, readiness, totals)."""


async def one_workload(
    service: Service,
    request: Request,
    cluster: str | None,
    namespace: str,
    name: str,
    kind: str | None,
    apiVersion: str | None,
    pods: bool,
    watch: bool,
    fmt: str | None = None,
) -> Response:
    if fmt is not None and watch:
        raise ProblemError(400, "format-not-on-streams", "Streams are not formatted", "format applies without watch")
    service.need_cluster("live workloads")
    state = request.scope["state"]
    if cluster is None and service.fleet_mode:
        # no cluster named: the one cluster that holds it (the service's own is no default here,
        # so one name means one workload across the fleet, or a 409 naming the clusters)
        member = await fleet_reads.find_in_fleet(
            service.members(None),
            namespace,
            name,
            kind,
            apiVersion,
            lambda m: service.auth.rights(state, m),
            lambda m: service.reader(m, kind, apiVersion, namespace),
        )
    else:
        member = service.member(cluster)
    if watch:
        try:
            return await streams.workload_stream(
                service.streams,
                request,
                streams.need_model(member.model),
                namespace,
                name,
                kind,
                apiVersion,
                pods,
                service.auth.rights(state, member),
            )
        except LookupFailed as e:
            raise service.explained(e, namespace, name, kind) from None
    if fmt is not None:
        return dumps(await formatted_workload(service, member, namespace, name, kind, apiVersion, state, fmt))
    body = await service.describe(member, namespace, name, kind, apiVersion, pods, state)
    body = await service.with_dependency_checks(member, body, state)
    if pods:  # pods that wait and fit nowhere now: the NoCapacity entry
        body = await no_capacity.with_verdict(service, member, body, state)
    return Response(body, media_type=JSON)


async def formatted_workload(
    service: Service,
    member: Member,
    namespace: str,
    name: str,
    kind: str | None,
    apiVersion: str | None,
    state: dict[str, Any],
    fmt: str,
) -> dict[str, Any]:
    """A live workload in a consumer's shape: found as GET finds it (any kind, with the caller's
    rights), then its object read and interpreted with its pod templates, which the live
    interpretation does not keep."""
    found = orjson.loads(await service.describe(member, namespace, name, kind, apiVersion, False, state))
    w = found["workload"]
    ref = ObjectRef(apiVersion=w["apiVersion"], kind=w["kind"], namespace=w["namespace"], name=w["name"])
    return await service.interpret_request(InterpretRequest(ref=ref), state, Read(), fmt, member)


async def workload_list(
    service: Service,
    request: Request,
    cluster: str | None,
    namespace: str | None,
    kind: str | None,
    watch: bool,
    query: ListQuery | None = None,
) -> Response:
    state = request.scope["state"]
    if watch and query is not None and query.pages:
        raise ProblemError(
            400,
            "paging-not-on-streams",
            "Streams are not paged",
            "sort, limit and continue apply to lists; a stream takes namespace, kind, phase, labelSelector and minGpus",
        )
    if not service.fleet_mode and cluster is None:
        member = service.member(None)
        allow = service.auth.rights(state, member)
        try:
            if watch:
                return await streams.list_stream(
                    service.streams, request, streams.need_model(member.model), namespace or None, kind, allow, query
                )
            # taken before the read: a stream resumed from it replays any change the read
            # may already hold (harmless: events carry whole rows), and misses none
            resume = member.model.events.token() if member.model is not None else None
            result = await service.reader(member, kind, None, namespace or None).summaries(
                namespace or None, kind, allow=allow
            )
        except LookupFailed as e:
            raise lookup_problem(e) from None
    else:
        members = service.members(cluster)
        if watch:
            return await streams.fleet_list_stream(
                service.streams,
                request,
                service.need_cluster("live workloads").fleet,
                [m.name for m in members] if cluster else None,
                namespace or None,
                kind,
                lambda m: service.auth.rights(state, m),
                service.auth.enabled,
                query,
            )
        fleet = service.need_cluster("live workloads").fleet
        resume = fleet.events.token() if all(m.model is not None for m in fleet.members.values()) else None
        result = await fleet_reads.fleet_summaries(
            members,
            namespace or None,
            kind,
            lambda m: service.auth.rights(state, m),
            lambda m: service.reader(m, kind, None, namespace or None),
        )
    meta = {"resumeFrom": resume} if resume else {}
    if query is not None:
        result["items"], token = query.apply(result["items"])
        if token:
            meta["continue"] = token
    if meta:
        result = {"metadata": meta, **result}
    state["items"] = len(result["items"])
    return dumps(result)


@router.get(
    "/workloads/{namespace}/{name}",
    operation_id="getWorkload",
    response_model=LiveInterpretation,
    responses={**PROBLEMS, 200: STREAM_RESPONSE},
    description=WORKLOAD_DOC,
    summary="A live workload: interpretation plus its pods (or, with watch=true, a stream of it)",
)
async def get_workload(
    namespace: str,
    name: str,
    request: Request,
    service: ServiceDep,
    kind: str | None = None,
    apiVersion: str | None = None,
    pods: bool = True,
    watch: bool = False,
    resumeFrom: str | None = None,
    cluster: str | None = None,
    format: str | None = Query(None, description=FORMAT_DOC),
) -> Response:
    fmt = format_param(format)
    return await one_workload(service, request, cluster, namespace, name, kind, apiVersion, pods, watch, fmt)


@router.get(
    "/fleet/workloads/{namespace}/{name}",
    operation_id="getFleetWorkload",
    response_model=FleetWorkload,
    responses=PROBLEMS,
    summary="One workload across the fleet: one phase by precedence, totals summed, a part per cluster",
)
async def get_fleet_workload(
    namespace: str,
    name: str,
    request: Request,
    service: ServiceDep,
    kind: str | None = None,
    apiVersion: str | None = None,
) -> Response:
    """The same workload (namespace, name and kind; `kind` and `apiVersion` as on
    GET /workloads/{namespace}/{name}) in every cluster where the caller may read it: a cluster
    where they may not is left out silently, one that cannot be searched is named in `warnings`.
    404 when no cluster the caller may read holds it; 409 when the name is several kinds (name
    one with `kind`).  The phase rules: docs/api-contract.md, "Fleet aggregate"."""
    service.need_cluster("live workloads")
    state = request.scope["state"]
    body = await fleet_reads.fleet_aggregate(
        service.members(None),
        namespace,
        name,
        kind,
        apiVersion,
        lambda m: service.auth.rights(state, m),
        lambda m: service.reader(m, kind, apiVersion, namespace),
    )
    return dumps(body)


@router.get(
    "/workloads",
    operation_id="listWorkloads",
    response_model=WorkloadList,
    description=LIST_DOC,
    responses={**PROBLEMS, 200: STREAM_RESPONSE},
    summary="One summary row per workload of every known kind (or, with watch=true, a stream of rows)",
)
async def list_workloads(request: Request, service: ServiceDep, p: ListDep, cluster: str | None = None) -> Response:
    return await workload_list(service, request, cluster, p.namespace, p.kind, p.watch, p.query(cluster))


@router.get(
    "/model",
    operation_id="getModel",
    response_model=ModelStatus,
    responses=PROBLEMS,
    summary="The live model: sync state, watched kinds, objects held, freshness",
)
async def model_status(request: Request, service: ServiceDep, cluster: str | None = None) -> Response:
    """The model of the service's own cluster, or of `cluster`.  With `--auth kubernetes` the
    caller needs `get` on the non-resource URL `/model` (it names every watched kind, namespace
    and count)."""
    await service.auth.require_path(request.scope["state"], "/model")
    member = None
    if service.cluster is not None:
        member = service.cluster.fleet.get(cluster) if cluster else service.cluster.home
        if member is None and cluster:
            raise ProblemError(404, "cluster-not-found", "Cluster not found", f"no cluster named {cluster!r}")
    model = member.model if member is not None else None
    if model is None:
        return dumps({"enabled": False, "synced": False, "reason": "no cluster" if member is None else "--cache false"})
    return dumps(
        model.status()
        | {"definitionsSynced": service.store.ready(), "streams": dict(service.streams.open)}
        | ({"store": service.sharing.status()} if service.sharing is not None else {})
    )
