"""ASGI middleware: request body limit (413 problem), and one log line + latency metric
per request (route template, status, duration, definition, phase); with --auth kubernetes, one
audit line (`wlmap.audit`) per request that read cluster data: who, what, where, the decision."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from ..documents import UnencodableValue, refuse_unencodable_json
from .auth import audit_fields
from .errors import SAID_ERRORS, problem_of
from .metrics import Metrics
from .problems import (
    ProblemError,
    internal_error,
    problem_response,
    unencodable_problem,
)

access_log = logging.getLogger("wlmap.access")
audit_log = logging.getLogger("wlmap.audit")


def _audit(scope: dict[str, Any], status: int) -> None:
    fields = audit_fields(scope.get("state") or {}, status)
    if fields is not None:
        route = scope.get("route")
        audit_log.info(
            "audit",
            extra={
                "fields": {
                    "route": getattr(route, "path", None) or "unmatched",
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "status": status,
                    **fields,
                }
            },
        )


# After a 413 the rest of the body is read and discarded before the connection is closed
# ("lingering close", as nginx does): closing with the client's data unread makes the kernel
# answer with a reset, and a client that sends its whole body before reading (urllib, requests,
# http.client) then gets ECONNRESET/EPIPE instead of the 413.  Bounded in bytes and in time, so a
# client that sends forever cannot hold the connection; nothing read is kept.
DRAIN_BYTES = 16 * 1024 * 1024  # at least; 4 x --max-body-bytes if that is more
DRAIN_SECONDS = 5.0


# Probes, scrapes and the API description answer without a token (kubelet and Prometheus have none);
# `/` only redirects to the web UI.
PUBLIC = ("/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")


def _unencodable_json(scope: dict[str, Any], body: bytes) -> ProblemError | None:
    """FastAPI reads JSON bodies with Python's parser, which takes NaN, Infinity and integers of
    any size: such a body is refused here (422 naming where), as /interpret refuses it."""
    if not body:
        return None
    media = next((v for k, v in scope.get("headers") or [] if k == b"content-type"), b"application/json")
    if b"json" not in media:
        return None
    try:
        refuse_unencodable_json(body)
    except UnencodableValue as e:
        return unencodable_problem(e)
    return None


def _public(path: str) -> bool:
    # The web UI's pages and assets hold no data (they call the API with the user's token).
    return path in PUBLIC or path == "/ui" or path.startswith("/ui/")


@dataclass(frozen=True)
class BodyLimits:
    """Bodies are held whole while their request runs: one is bounded (--max-body-bytes: 413),
    what all requests in progress hold is bounded (--max-inflight-body-bytes: 503 beyond, never
    less than one largest body), as is the time to send one (--body-read-timeout: 408), so
    neither many nor slow senders can make the service hold memory at will."""

    max_body: int = 3 * 1024 * 1024
    inflight: int = 32 * 1024 * 1024
    seconds: float = 30.0


async def _no_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}  # an answer written after the body was read never asks for more


class ReadRequest(Request):
    """A request whose body this middleware has already read (bounded): a direct route takes it as
    it is, instead of streaming the replayed message again (~7 µs of the hot path)."""

    def __init__(self, scope: dict[str, Any], receive: Any, body: bytes):
        super().__init__(scope, receive)
        self._read = body

    async def body(self) -> bytes:
        return self._read


class ServiceMiddleware:
    """Outermost layer: body limit, access log, latency metric; and the hot path.

    The direct routes (routes/direct.py: POST /interpret, which schedulers call hundreds of
    times per placement round) are answered here by their own handler, without the framework's
    routing, dependency and exception layers.  Everything else goes through FastAPI."""

    def __init__(
        self,
        app: Any,
        limits: BodyLimits,
        metrics: Metrics,
        direct: dict[tuple[str, str], Any],
        authenticate: Any = None,
    ):
        self.app, self.max_body, self.direct = app, limits.max_body, direct
        self.authenticate = authenticate  # (scope) -> None, raises ProblemError (401/503)
        self.max_inflight, self.body_seconds = max(limits.inflight, limits.max_body), limits.seconds
        self.requests = metrics.requests
        self.inflight = 0  # body bytes held by the requests in progress

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        scope.setdefault("state", {})
        info: dict[str, Any] = {"status": 500}
        limit = self.max_body

        for name, value in scope.get("headers") or []:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await self._reject(scope, receive, send, info, started)
                    return
                if self.inflight + declared > self.max_inflight:
                    await self._reject(scope, receive, send, info, started, problem=self._busy())
                    return

        # Read the whole body here (it is bounded), so an oversized chunked body is a 413 before
        # any framework code sees it, and the fast path has it at hand.
        body = b""
        if scope.get("method") in ("POST", "PUT", "PATCH"):
            chunks: list[bytes] = []
            size = 0
            try:
                async with asyncio.timeout(self.body_seconds):
                    while True:
                        msg = await receive()
                        if msg["type"] == "http.disconnect":
                            self._record(scope, info, started)
                            return
                        chunk = msg.get("body", b"")
                        size += len(chunk)
                        if size > limit or self.inflight + len(chunk) > self.max_inflight:
                            chunks.clear()  # not held while the rest is drained
                            await self._reject(
                                scope,
                                receive,
                                send,
                                info,
                                started,
                                more=bool(msg.get("more_body")),
                                problem=None if size > limit else self._busy(),
                            )
                            return
                        chunks.append(chunk)
                        self.inflight += len(chunk)
                        info["held"] = info.get("held", 0) + len(chunk)
                        if not msg.get("more_body"):
                            break
            except TimeoutError:
                chunks.clear()
                await self._reject(
                    scope,
                    receive,
                    send,
                    info,
                    started,
                    problem=ProblemError(
                        408,
                        "body-timeout",
                        "Request body too slow",
                        f"the request body did not arrive within {self.body_seconds:g} s",
                    ),
                )
                return
            body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as a server does

        async def tracking_send(msg: Any) -> None:
            if msg["type"] == "http.response.start":
                info["status"] = msg["status"]
                _audit(scope, msg["status"])  # at the answer, so a stream is audited when it opens
            await send(msg)

        try:
            if self.authenticate is not None and not _public(scope["path"]):
                try:
                    await self.authenticate(scope)
                except ProblemError as e:
                    await problem_response(e, scope.get("path"))(scope, _no_body, tracking_send)
                    return
            if (route := self.direct.get((scope["method"], scope["path"]))) is not None:
                scope["route"] = route  # the metric and log label, as the framework's routing sets it
                await self._direct(route.endpoint, scope, body, replay, tracking_send)
            elif (refused := _unencodable_json(scope, body)) is not None:
                await problem_response(refused, scope.get("path"))(scope, _no_body, tracking_send)
            else:
                await self.app(scope, replay, tracking_send)
        finally:
            self._record(scope, info, started)

    async def _direct(self, handler: Any, scope: dict[str, Any], body: bytes, receive: Any, send: Any) -> None:
        try:
            response = await handler(ReadRequest(scope, receive, body))
        except SAID_ERRORS as e:
            response = problem_response(problem_of(e), scope.get("path"))  # with its headers (Retry-After)
        except Exception as e:
            response = internal_error(scope.get("path"), e)
        await response(scope, receive, send)

    def _busy(self) -> ProblemError:
        return ProblemError(
            503,
            "busy",
            "Server busy",
            f"the requests in progress hold {self.max_inflight} bytes of bodies "
            "(--max-inflight-body-bytes); try again shortly",
            headers={"retry-after": "1"},
        )

    async def _reject(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Any,
        info: dict[str, Any],
        started: float,
        more: bool = True,
        problem: ProblemError | None = None,
    ) -> None:
        """413 (or `problem`), then drain the rest of the body (bounded, nothing kept) and close.

        The answer is written whole at once, but its last (empty) body message is held back
        while the body is drained: uvicorn closes the connection as soon as a `connection:
        close` response is complete, and from then on its `receive()` only says disconnect, so
        draining must happen before completion.  `more` is False when the body has already
        been read to its end."""
        answer = problem_response(
            problem
            or ProblemError(
                413, "body-too-large", "Request body too large", f"the request body exceeds {self.max_body} bytes"
            ),
            scope.get("path"),
            {"connection": "close"},
        )
        info["status"] = answer.status_code
        await send({"type": "http.response.start", "status": answer.status_code, "headers": answer.raw_headers})
        await send({"type": "http.response.body", "body": answer.body, "more_body": True})
        self._record(scope, info, started)  # the latency of the answer, not of the drain
        if more:
            left = max(DRAIN_BYTES, 4 * self.max_body)
            try:
                async with asyncio.timeout(DRAIN_SECONDS):
                    while left > 0:
                        msg = await receive()
                        if msg["type"] != "http.request":
                            break  # disconnected
                        left -= len(msg.get("body", b""))  # discarded
                        if not msg.get("more_body"):
                            break
            except TimeoutError:
                pass
        await send({"type": "http.response.body", "body": b""})  # complete: the server closes

    def _record(self, scope: dict[str, Any], info: dict[str, Any], started: float) -> None:
        self.inflight -= info.pop("held", 0)  # every way a request ends comes here once: its body is let go
        duration = time.perf_counter() - started
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        self.requests.labels(template, scope.get("method", ""), str(info["status"])).observe(duration)
        state = scope.get("state") or {}
        fields = {
            "route": template,
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": info["status"],
            "duration_ms": round(duration * 1000, 3),
        }
        for key in ("definition", "phase", "items"):
            if key in state:  # a definition's name may come from the caller: cut to a Kubernetes name's length
                fields[key] = state[key][:253] if isinstance(state[key], str) else state[key]
        if template in ("/healthz", "/readyz", "/metrics") and info["status"] == 200:
            return  # probes and scrapes would drown the log
        access_log.info("request", extra={"fields": fields})
