"""POST /fit: where a workload can run now (app/service/fit.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from .. import fit
from ..bodies import dumps, media_type
from ..models import FitResponse
from ..service import one_document
from .common import PROBLEMS, ServiceDep, manifest_or_envelope

router = APIRouter(tags=["fit"])

FIT_BODY = manifest_or_envelope("FitRequest")


@router.post(
    "/fit",
    operation_id="fit",
    response_model=FitResponse,
    responses=PROBLEMS,
    summary="Where a workload fits now: per cluster, fits, sets, a placement plan or the shortfall",
    openapi_extra={"requestBody": FIT_BODY},
)
async def fit_endpoint(
    request: Request,
    service: ServiceDep,
    policy: Annotated[
        Literal["pack", "spread"] | None,
        Query(description="pack (the default): each pod onto the most allocated node with room; spread: the least"),
    ] = None,
    clusters: Annotated[
        str | None, Query(description="cluster names, comma-separated (default: every cluster)")
    ] = None,
) -> Response:
    """The body is what `POST /interpret` takes (a manifest, or `{"object" | "ref", "definition"?}`);
    the query gives `policy` and `clusters`.  The workload is interpreted, its pod-bearing instances become pod
    groups (a gang hint sets their gang minimum and topology: docs/capacity.md), and each cluster's
    nodes and free capacity, from the live model (no API request), get a plan.

    A cluster's verdict (which names nodes) is given only where the caller may `list nodes`;
    elsewhere `state: forbidden` and no figure.  Clusters are ranked: fitting first, then more
    `sets`, then by name; `best` is the first that fits, null when none does."""
    doc = one_document(await request.body(), media_type(request))
    return dumps(await fit.fit(service, doc, request.scope["state"], policy, clusters))
