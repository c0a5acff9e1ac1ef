"""POST /interpret, /interpret/update and /interpret/batch."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ...engine.batch_totals import group_totals, item_totals, sum_totals
from ...problem import problem_body
from ..bodies import dumps, media_type
from ..consumer_formats import FORMAT_DOC, FORMAT_PARAMETER, format_param
from ..errors import SAID_ERRORS, problem_of
from ..models import (
    BatchRequest,
    BatchResponse,
    Interpretation,
    InterpretRequest,
    UpdateRequest,
    UpdateResponse,
)
from ..problems import ProblemError
from ..service import Read
from ..updates import update_doc
from .common import PROBLEMS, ServiceDep, get_service, manifest_or_envelope
from .direct import DirectRoute

BATCH_CONCURRENCY = 32  # items of one batch in flight at once (each may read the cluster and review rights)

router = APIRouter(tags=["interpret"])

INTERPRET_BODY = manifest_or_envelope("InterpretRequest")


async def interpret_endpoint(request: Request) -> Response:
    """A raw manifest (JSON or YAML), or an envelope `{"object", "definition"?, "pods"?}`."""
    service = get_service(request)  # a direct route: no dependency is solved for it
    fmt = format_param(request.query_params.get("format"))
    return dumps(await service.interpret_body(await request.body(), media_type(request), request.scope["state"], fmt))


router.add_api_route(
    "/interpret",
    interpret_endpoint,
    methods=["POST"],
    route_class_override=DirectRoute,
    response_model=Interpretation,
    operation_id="interpret",
    responses=PROBLEMS,
    summary="Interpret one workload",
    openapi_extra={"requestBody": INTERPRET_BODY, "parameters": [FORMAT_PARAMETER]},
)


@router.post(
    "/interpret/update",
    operation_id="interpretUpdate",
    response_model=UpdateResponse,
    responses=PROBLEMS,
    summary="Write labels, a scheduler, tolerations... into every pod of a workload",
)
async def update_endpoint(req: UpdateRequest, request: Request, service: ServiceDep, apply: bool = False) -> Response:
    """Rewrites the object through its definition's pod paths and returns it with the RFC 6902
    patch that makes it.  `ref` reads the object with the caller's rights.  `apply=true` (with
    `ref`, and --actions true): the patch is applied, guarded by the resourceVersion read (409
    when the object changed since), with the caller's `patch` right; `applied` says so and
    `object` is the object as stored."""
    return dumps(
        await update_doc(service, req.model_dump(by_alias=True, exclude_none=True), request.scope["state"], apply)
    )


@router.post(
    "/interpret/batch",
    operation_id="interpretBatch",
    response_model=BatchResponse,
    responses=PROBLEMS,
    summary="Interpret many workloads; one bad item never fails the others",
)
async def batch_endpoint(
    req: BatchRequest,
    request: Request,
    service: ServiceDep,
    groupBy: str | None = None,
    format: str | None = Query(None, description=FORMAT_DOC),
) -> Response:
    """`totals` sums the items that interpreted with whole totals; the others (failed, or
    partial with `totals` null) count in `totals.failed`.  `groupBy=<label key>` adds
    `groups`: the items by that label's value on the workload, each with its totals.
    `format=`: every item in that consumer's shape (an item it cannot take gets `error`)."""
    fmt = format_param(format)
    if groupBy is not None and not 0 < len(groupBy) <= 317:  # a label key: prefix (253) / name (63)
        raise ProblemError(422, "invalid-request", "Invalid request", "groupBy must be a label key")
    state = request.scope["state"]
    running = asyncio.Semaphore(BATCH_CONCURRENCY)
    reads = [Read() for _ in req.items]  # what each item read (its workload's labels, once known)

    async def one(n: int, item: InterpretRequest) -> dict[str, Any]:
        sub = service.auth.substate(state)  # each item reads with the caller's rights, in a state of its own
        try:
            async with running:
                return await service.interpret_request(item, sub, reads[n], fmt)
        except SAID_ERRORS as e:
            p = problem_of(e)
            return {"error": problem_body(p.status, p.slug, p.title, p.detail, None, p.errors)}

    request.scope["state"]["items"] = len(req.items)
    service.bound_pods(sum(len(i.pods or ()) for i in req.items))
    results = await asyncio.gather(*(one(n, i) for n, i in enumerate(req.items)))
    if fmt is not None:  # consumer shapes carry no totals
        return dumps({"items": results})
    out: dict[str, Any] = {"items": results, "totals": sum_totals(map(item_totals, results))}
    if groupBy is not None:
        values = [
            ls.get(groupBy) if isinstance(ls, dict) and isinstance(ls.get(groupBy), str) else None
            for ls in (r.labels for r in reads)
        ]
        out["groups"] = group_totals(results, values)
    return dumps(out)
