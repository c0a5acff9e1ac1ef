"""POST /workloads/{namespace}/{name}/suspend|resume and their /clusters/{cluster}/... twins
(--actions true; the steps of a write are in app/service/actions.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..actions import suspend_or_resume
from ..bodies import JSON
from ..models import ActedInterpretation
from .common import PROBLEMS, ServiceDep

router = APIRouter()

ROUTE_DOC = """Applies the workload's definition's `suspendDefinition` ({which}Actions: each `(path) =
    value` in order, on the object as the API server holds it) as one JSON patch guarded by its
    resourceVersion, and answers the live interpretation read after it (`action.changed`: false
    when there was nothing to change).  Only with `--actions true` (else 403 `actions-disabled`).
    The caller needs `patch` on the workload (asked before it is read) and `get` on it; `kind` /
    `apiVersion` as GET /workloads/{{namespace}}/{{name}} takes them.  409 `conflict`: the object
    changed between the read and the patch, nothing was written.  422 `no-suspend-definition`:
    the definition has none."""


def _add(which: str) -> None:
    """POST /workloads/{ns}/{name}/<which> and its /clusters/{cluster}/... twin."""

    async def one(
        namespace: str,
        name: str,
        request: Request,
        service: ServiceDep,
        kind: str | None = None,
        apiVersion: str | None = None,
        pods: bool = True,
        cluster: str | None = None,
    ) -> Response:
        return Response(
            await suspend_or_resume(
                service, request.scope["state"], which, cluster, namespace, name, kind, apiVersion, pods
            ),
            media_type=JSON,
        )

    async def in_cluster(
        cluster: str,
        namespace: str,
        name: str,
        request: Request,
        service: ServiceDep,
        kind: str | None = None,
        apiVersion: str | None = None,
        pods: bool = True,
    ) -> Response:
        return Response(
            await suspend_or_resume(
                service, request.scope["state"], which, cluster, namespace, name, kind, apiVersion, pods
            ),
            media_type=JSON,
        )

    doc = ROUTE_DOC.format(which=which)
    router.add_api_route(
        f"/workloads/{{namespace}}/{{name}}/{which}",
        one,
        methods=["POST"],
        operation_id=f"{which}Workload",
        response_model=ActedInterpretation,
        responses=PROBLEMS,
        tags=["workloads"],
        description=doc,
        summary=f"{which.capitalize()} a workload through its definition (--actions true)",
    )
    router.add_api_route(
        f"/clusters/{{cluster}}/workloads/{{namespace}}/{{name}}/{which}",
        in_cluster,
        methods=["POST"],
        operation_id=f"{which}ClusterWorkload",
        response_model=ActedInterpretation,
        responses=PROBLEMS,
        tags=["clusters"],
        description=doc,
        summary=f"{which.capitalize()} a workload of one cluster (--actions true)",
    )


for _which in ("suspend", "resume"):
    _add(_which)
