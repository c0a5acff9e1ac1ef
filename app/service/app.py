"""The HTTP API (docs/api-contract.md): the app, composed of the routers (routes/), the
middleware (body limits, access log, the direct routes: POST /interpret), the problem+json
exception handlers and the web UI.  What the service is made of, wiring.build makes."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..ui import mount_ui
from . import wiring
from .errors import DOMAIN_ERRORS, on_domain_error
from .middleware import ServiceMiddleware
from .openapi import patch_openapi
from .problems import ProblemError, on_http, on_problem, on_unexpected, on_validation
from .routes import (
    actions,
    clusters,
    definitions,
    divide,
    fit,
    health,
    interpret,
    metrics,
    workloads,
)
from .routes.direct import direct_routes
from .settings import Settings

DESCRIPTION = (
    "Interpret any Kubernetes AI workload through Karta (NVIDIA Workload Map) definitions: "
    "normalized status, component tree, scale and resource totals, gang hints."
)


def create_app(settings: Settings | None = None) -> FastAPI:
    service = wiring.build(settings or Settings())

    app = FastAPI(
        title="workload-map", version=__version__, lifespan=lambda _: service.running(), description=DESCRIPTION
    )
    app.state.service = service
    app.add_exception_handler(ProblemError, on_problem)  # type: ignore[arg-type]
    for error in DOMAIN_ERRORS:  # the lower layers' errors, said as the table in errors.py says
        app.add_exception_handler(error, on_domain_error)
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, on_unexpected)
    routers = (
        interpret.router,
        definitions.router,
        workloads.router,
        clusters.router,
        fit.router,
        divide.router,
        actions.router,
        metrics.router,
        health.router,
    )
    app.add_middleware(
        ServiceMiddleware,
        limits=service.body_limits,
        metrics=service.metrics,
        direct=direct_routes(*routers),
        authenticate=service.auth.authenticate if service.auth.enabled else None,
    )
    for router in routers:
        app.include_router(router)
    mount_ui(app)
    patch_openapi(app)
    return app
