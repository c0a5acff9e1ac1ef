"""POST /divide: a workload's counts split over clusters (app/service/divide.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..bodies import dumps
from ..divide import divide_doc
from ..models import DivideRequest, DivideResponse
from .common import PROBLEMS, ServiceDep

router = APIRouter(tags=["interpret"])


@router.post(
    "/divide",
    operation_id="divide",
    response_model=DivideResponse,
    responses=PROBLEMS,
    summary="Split a workload's replicas over clusters: one rewritten copy per cluster",
)
async def divide_endpoint(req: DivideRequest, request: Request, service: ServiceDep) -> Response:
    """Each divisible component's counts are split by the clusters' weights (largest remainder:
    the parts add up to the original); gang components and components whose count cannot be
    written are kept whole in the highest-weight cluster's part (`kept` says why).  `by:
    capacity` weighs each cluster by the fit (where the caller may list nodes).  `ref` reads the
    object with the caller's rights."""
    return dumps(await divide_doc(service, req.model_dump(exclude_none=True), request.scope["state"]))
