"""ASGI middleware: request body limit (413 problem), and one JSON log line + latency metric
per request (route template, status, duration, definition, phase)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson

from .metrics import REQUESTS
from .problems import problem_body

access_log = logging.getLogger("wlmap.access")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname.lower(),
                                 "logger": record.name}
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        else:
            entry["msg"] = record.getMessage()
        return orjson.dumps(entry).decode()


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("wlmap")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


class _TooLarge(Exception):
    pass


class ServiceMiddleware:
    def __init__(self, app: Any, max_body: int):
        self.app, self.max_body = app, max_body

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
                    too_big = int(value) > limit
                except ValueError:
                    too_big = False
                if too_big:
                    await self._reject(scope, send, info)
                    self._record(scope, info, started)
                    return

        received = 0
        response_started = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return msg

        async def tracking_send(msg: dict[str, Any]) -> None:
            nonlocal response_started
            if msg["type"] == "http.response.start":
                response_started = True
                info["status"] = msg["status"]
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not response_started:
                await self._reject(scope, send, info)
        finally:
            self._record(scope, info, started)

    async def _reject(self, scope: dict[str, Any], send: Any, info: dict[str, Any]) -> None:
        body = orjson.dumps(problem_body(413, "body-too-large", "Request body too large",
                                         f"the request body exceeds {self.max_body} bytes", scope.get("path")))
        info["status"] = 413
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/problem+json"),
                                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    def _record(self, scope: dict[str, Any], info: dict[str, Any], started: float) -> None:
        duration = time.perf_counter() - started
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        REQUESTS.labels(template, scope.get("method", ""), str(info["status"])).observe(duration)
        state = scope.get("state") or {}
        fields = {"route": template, "method": scope.get("method"), "path": scope.get("path"),
                  "status": info["status"], "duration_ms": round(duration * 1000, 3)}
        for key in ("definition", "phase", "items"):
            if key in state:
                fields[key] = state[key]
        if template in ("/healthz", "/readyz", "/metrics") and info["status"] == 200:
            return  # probes and scrapes would drown the log
        access_log.info("request", extra={"fields": fields})
