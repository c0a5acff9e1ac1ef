"""POST /workloads/{namespace}/{name}/suspend|resume|scale|restart and their /clusters/{cluster}/...
twins (--actions true; the steps of a write are in app/service/actions.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from ..actions import Compute, act, suspending
from ..bodies import JSON
from ..models import ActedInterpretation, ScaleRequest
from ..service import Service
from ..updates import restarting, scaling
from .common import PROBLEMS, ServiceDep

router = APIRouter()

COMMON = """As one JSON patch guarded by its resourceVersion, on the object as the API server holds
    it; the answer is the live interpretation read after it (`action.changed`: false when there was
    nothing to change).  Only with `--actions true` (else 403 `actions-disabled`).  The caller
    needs `patch` on the workload (asked before it is read) and `get` on it; `kind` / `apiVersion`
    as GET /workloads/{namespace}/{name} takes them.  409 `conflict`: the object changed between
    the read and the patch, nothing was written."""
DOCS = {
    "suspend": "Applies the workload's definition's `suspendDefinition` (suspendActions: each `(path) = value` "
    "in order).  422 `no-suspend-definition`: the definition has none.",
    "resume": "Applies the workload's definition's `suspendDefinition` (resumeActions: each `(path) = value` "
    "in order).  422 `no-suspend-definition`: the definition has none.",
    "scale": 'Writes `replicas` (`{"<component>": n}`, `{"<component>/<instance id>": n}`) through each '
    "component's `scaleDefinition.replicasPath`, as `POST /interpret/update` does.  422 `update-refused`: a "
    "component without a replicasPath, one whose replicas are computed, a count outside its "
    "minReplicas / maxReplicas; 422 `update-does-not-read-back`: the result would not read as asked.",
    "restart": "Writes the annotation `kubectl.kubernetes.io/restartedAt: <now>` into every pod template (as "
    "`kubectl rollout restart` does), for the kinds whose controller rolls pods on a template change: "
    'their definition says `workload-map.dev/restart: rollout` (docs/definitions.md, "Restart").  422 '
    "`restart-not-supported`: the kind does not roll (a Job, a JobSet, a RayCluster...).",
}
SUMMARY = {
    "suspend": "Suspend a workload through its definition",
    "resume": "Resume a workload through its definition",
    "scale": "Scale a workload's components through its definition",
    "restart": "Restart a workload's pods (a rollout) through its definition",
}


Where = tuple[str | None, str, str, str | None, str | None, bool]  # cluster, namespace, name, kind, apiVersion, pods


async def _no_body() -> None:
    return None


async def _scale_body(req: ScaleRequest) -> ScaleRequest:
    return req


def _add(which: str, compute: Callable[[Service, ScaleRequest | None], Compute], body: bool = False) -> None:
    """POST /workloads/{ns}/{name}/<which> and its /clusters/{cluster}/... twin (`body`: the
    action takes a ScaleRequest, read by a dependency so both routes stay one function each)."""
    read_body = _scale_body if body else _no_body

    def respond(service: Service, request: Request, req: ScaleRequest | None, where: Where) -> Awaitable[bytes]:
        return act(service, request.scope["state"], which, *where, compute(service, req))

    async def one(
        namespace: str,
        name: str,
        request: Request,
        service: ServiceDep,
        kind: str | None = None,
        apiVersion: str | None = None,
        pods: bool = True,
        cluster: str | None = None,
        req: ScaleRequest | None = Depends(read_body),  # a local: not resolvable from a string annotation
    ) -> Response:
        return Response(
            await respond(service, request, req, (cluster, namespace, name, kind, apiVersion, pods)), media_type=JSON
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
        req: ScaleRequest | None = Depends(read_body),
    ) -> Response:
        return Response(
            await respond(service, request, req, (cluster, namespace, name, kind, apiVersion, pods)), media_type=JSON
        )

    doc = f"{DOCS[which]}  {COMMON}"
    for path, endpoint, op, tag, summary in (
        (f"/workloads/{{namespace}}/{{name}}/{which}", one, f"{which}Workload", "workloads", SUMMARY[which]),
        (
            f"/clusters/{{cluster}}/workloads/{{namespace}}/{{name}}/{which}",
            in_cluster,
            f"{which}ClusterWorkload",
            "clusters",
            f"{SUMMARY[which]}, in one cluster",
        ),
    ):
        router.add_api_route(
            path,
            endpoint,
            methods=["POST"],
            operation_id=op,
            response_model=ActedInterpretation,
            responses=PROBLEMS,
            tags=[tag],
            description=doc,
            summary=f"{summary} (--actions true)",
        )


def _suspending(which: str) -> Callable[[Service, ScaleRequest | None], Compute]:
    return lambda _s, _r: suspending(which)


_add("suspend", _suspending("suspend"))
_add("resume", _suspending("resume"))
_add("restart", lambda s, _r: restarting(s))
_add("scale", lambda s, r: scaling(s, dict(r.replicas) if r is not None else {}), body=True)
