"""GET /healthz and /readyz: the probes (public: the kubelet has no token)."""

from __future__ import annotations

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from ..bodies import JSON, dumps
from ..models import Health
from .common import ServiceDep

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", response_model=Health)
async def healthz() -> Response:
    return dumps({"status": "ok"})


@router.get("/readyz", operation_id="readyz", response_model=Health, responses={503: {"model": Health}})
async def readyz(service: ServiceDep) -> Response:
    served, _ = service.store.counts()
    if not service.ready:
        return Response(orjson.dumps({"status": "not ready", "detail": "starting"}), status_code=503, media_type=JSON)
    if not service.store.ready():
        waiting = [k for k, done in service.store.synced.items() if not done]
        return Response(
            orjson.dumps(
                {
                    "status": "not ready",
                    "definitions": served,
                    "detail": "waiting for the first sync of " + ", ".join(waiting),
                }
            ),
            status_code=503,
            media_type=JSON,
        )
    return dumps({"status": "ok", "definitions": served})
