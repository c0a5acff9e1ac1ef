"""Routes the middleware answers itself, before the framework's routing, dependency and
exception layers: the hot path.  POST /interpret is called hundreds of times per scheduler
placement round, and through those layers each request costs ~200 µs more CPU, ~1.8x
(http_bench side by side; BENCHMARKS.md, "HTTP service").  Such a route is declared like any other (the
OpenAPI document reads its path,
models and responses) and has one handler, `endpoint(request) -> Response`, that takes no
dependencies: the middleware calls it with the body it has read (middleware.py), and the
framework would too (get_route_handler) were it reached without the middleware."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class DirectRoute(APIRoute):
    def get_route_handler(self) -> Handler:
        handler: Handler = self.endpoint
        return handler


def direct_routes(*routers: APIRouter) -> dict[tuple[str, str], DirectRoute]:
    """The direct routes of `routers`, by method and path (what the middleware matches)."""
    return {
        (method, r.path): r
        for router in routers
        for r in router.routes
        if isinstance(r, DirectRoute)
        for method in r.methods or ()
    }
