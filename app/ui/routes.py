"""Routes of the web UI: one HTML shell for every page (a small client-side router reads
`location.pathname`), ES modules and one stylesheet under /ui/static.  Not in openapi.json.

The HTML and assets are public (middleware `_public`): they hold no data.  Data comes from the
JSON API, which the pages call with the bearer token the user pastes (kept in sessionStorage).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from .. import __version__

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
SHELL = (HERE / "index.html").read_text(encoding="utf-8")

# The pages build the DOM from API data with textContent only; the policy is a second line of
# defence for the token kept in sessionStorage (no inline script, no third-party origin).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class _Assets(StaticFiles):
    """Static files revalidated on every load (ETag → 304), so an upgraded service never runs
    a stale module next to a fresh one."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        resp = super().file_response(*args, **kwargs)
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["X-Content-Type-Options"] = "nosniff"
        return resp


def _fleet_mode(request: Request) -> bool:
    """The service reads several clusters (or may, by Secret): the pages offer the fleet."""
    service = getattr(request.app.state, "service", None)
    return bool(getattr(service, "fleet_mode", False))


def _actions(request: Request) -> bool:
    """The service writes to workloads (--actions true): the workload page offers Suspend / Resume."""
    service = getattr(request.app.state, "service", None)
    return bool(getattr(getattr(service, "settings", None), "actions", False))


async def _shell(request: Request) -> Response:
    base = html.escape(str(request.scope.get("root_path") or "").rstrip("/"), quote=True)
    fleet = _fleet_mode(request)
    body = (
        SHELL.replace("{{BASE}}", base)
        .replace("{{VERSION}}", html.escape(__version__))
        .replace("{{FLEET}}", "true" if fleet else "false")
        .replace("{{ACTIONS}}", "true" if _actions(request) else "false")
        .replace("{{FLEET_HIDDEN}}", "" if fleet else " hidden")
    )
    return Response(
        body, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-cache", **SECURITY_HEADERS}
    )


def mount_ui(app: FastAPI) -> None:
    """Add the web UI to the service (call after the API routes)."""

    @app.get("/", include_in_schema=False)  # a browser opened on the service's address lands on the pages
    @app.get("/ui", include_in_schema=False)
    async def ui_root(request: Request) -> Response:
        base = str(request.scope.get("root_path") or "").rstrip("/")
        return RedirectResponse(base + "/ui/" + (f"?{request.url.query}" if request.url.query else ""), status_code=307)

    for path in (
        "/ui/",
        "/ui/interpret",
        "/ui/workloads/{namespace}/{name}",
        "/ui/definitions/{name}",
        "/ui/fleet",
        "/ui/clusters/{cluster}/workloads/{namespace}/{name}",
    ):
        app.add_api_route(path, _shell, methods=["GET"], include_in_schema=False, response_class=Response)

    app.mount("/ui/static", _Assets(directory=STATIC), name="ui-static")
