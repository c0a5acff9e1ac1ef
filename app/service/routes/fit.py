"""POST /fit: where a workload can run now (app/service/fit.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
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
async def fit_endpoint(request: Request, service: ServiceDep) -> Response:
    """The body is what `POST /interpret` takes (a manifest, or `{"object" | "ref", "definition"?}`),
    with `policy` (`binpack`, the default, or `spread`) and `clusters` (names; default every
    cluster) in the envelope.  The workload is interpreted, its pod-bearing instances become pod
    groups (a gang hint sets their gang minimum and topology: docs/capacity.md), and each cluster's
    nodes and free capacity, from the live model (no API request), get a plan.

    A cluster's verdict (which names nodes) is given only where the caller may `list nodes`;
    elsewhere `state: forbidden` and no figure.  Clusters are ranked: fitting first, then more
    `sets`, then by name; `best` is the first that fits, null when none does."""
    doc = one_document(await request.body(), media_type(request))
    return dumps(await fit.fit(service, doc, request.scope["state"]))
