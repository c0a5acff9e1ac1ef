"""The HTTP API (docs/api-contract.md): the app, composed of the routers (routes/), the
middleware (body limits, access log, the /interpret fast path), the problem+json exception
handlers and the web UI."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..engine import accelerators
from ..engine import interpret as interpret_mod
from ..ui import mount_ui
from . import streams
from .errors import DOMAIN_ERRORS, on_domain_error
from .middleware import BodyLimits, ServiceMiddleware
from .openapi import patch_openapi
from .problems import ProblemError, on_http, on_problem, on_unexpected, on_validation
from .routes import (
    actions,
    clusters,
    definitions,
    health,
    interpret,
    metrics,
    workloads,
)
from .service import Service
from .settings import Settings
from .state_metrics import STATE

DESCRIPTION = ("Interpret any Kubernetes AI workload through Karta (NVIDIA Workload Map) definitions: "
               "normalized status, component tree, scale and resource totals, gang hints.")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    interpret_mod.JQ_RESULT_CACHE = settings.jq_result_cache
    accelerators.configure(settings.accelerator_resources, settings.gpu_resources)  # before workers are spawned
    streams.Limits.buffer, streams.Limits.write_timeout = settings.stream_buffer, settings.stream_write_timeout
    streams.Limits.per_caller, streams.Limits.total = settings.max_streams_per_caller, settings.max_streams
    BodyLimits.inflight, BodyLimits.seconds = settings.max_inflight_body_bytes, settings.body_read_timeout
    service = Service(settings)

    app = FastAPI(title="workload-map", version=__version__, lifespan=lambda _: service.running(),
                  description=DESCRIPTION)
    app.state.service = service
    app.add_exception_handler(ProblemError, on_problem)  # type: ignore[arg-type]
    for error in DOMAIN_ERRORS:  # the lower layers' errors, said as the table in errors.py says
        app.add_exception_handler(error, on_domain_error)
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(ServiceMiddleware, max_body=settings.max_body_bytes, fast_interpret=service.interpret_body,
                       authenticate=service.auth.authenticate if service.auth.enabled else None)
    STATE.store, STATE.service = service.store, service
    for router in (interpret.router, definitions.router, workloads.router, clusters.router, actions.router,
                   metrics.router, health.router):
        app.include_router(router)
    mount_ui(app)
    patch_openapi(app)
    return app
