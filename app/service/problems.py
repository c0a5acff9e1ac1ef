"""RFC 9457 problem details: every error the service returns, never a stack trace."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..documents import UnencodableValue
from ..problem import problem_body

PROBLEM_JSON = "application/problem+json"


class ProblemError(Exception):
    """Raise anywhere in a handler to answer with a problem document (the layers below raise
    their own errors, which errors.py says as problems)."""

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str,
        errors: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(detail)
        self.status, self.slug, self.title, self.detail, self.errors = status, slug, title, detail, errors
        self.extra, self.headers = extra or {}, headers or {}

    def body(self, instance: str | None) -> dict[str, Any]:
        return {**problem_body(self.status, self.slug, self.title, self.detail, instance, self.errors), **self.extra}


def envelope(model: Any, doc: Any, expected: str) -> Any:
    """A request envelope checked against its model (422 naming each field that does not fit)."""
    if not isinstance(doc, dict):
        raise ProblemError(422, "invalid-request", "Invalid request", expected)
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise ProblemError(
            422,
            "invalid-request",
            "Invalid request",
            "the request does not match its schema",
            [{"path": ".".join(str(x) for x in err["loc"]), "message": err["msg"]} for err in e.errors()],
        ) from None


def problem_response(e: ProblemError, instance: str | None, headers: dict[str, str] | None = None) -> Response:
    """The one writer of a problem answer (the exception handlers and the middleware's): its
    document, status and headers (Retry-After...), and `headers` beyond them."""
    return Response(
        orjson.dumps(e.body(instance)),
        status_code=e.status,
        media_type=PROBLEM_JSON,
        headers={**e.headers, **(headers or {})},
    )


def internal_error(instance: str | None, exc: BaseException) -> Response:
    """The 500 answer of an error no handler expected: logged here, never a stack trace to the caller."""
    logging.getLogger("wlmap.http").error("unhandled error on %s: %s: %s", instance, type(exc).__name__, exc)
    return problem_response(
        ProblemError(500, "internal-error", "Internal error", "the server failed to process the request"), instance
    )


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    500: "Internal error",
    501: "Not implemented",
    503: "Service unavailable",
}


async def on_problem(request: Request, exc: ProblemError) -> Response:
    return problem_response(exc, request.url.path)


async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
    title = _TITLES.get(exc.status_code, "Error")
    detail = exc.detail if isinstance(exc.detail, str) else title
    return problem_response(
        ProblemError(exc.status_code, title.lower().replace(" ", "-"), title, detail),
        request.url.path,
        dict(exc.headers or {}),
    )


async def on_validation(request: Request, exc: RequestValidationError) -> Response:
    errors = []
    for e in exc.errors():
        loc = [str(x) for x in e.get("loc", ())]
        if loc and loc[0] in ("body", "query", "path", "header"):
            loc = loc[1:]
        errors.append({"path": ".".join(loc), "message": str(e.get("msg"))})
    return problem_response(
        ProblemError(422, "invalid-request", "Invalid request", "the request does not match its schema", errors),
        request.url.path,
    )


async def on_unexpected(request: Request, exc: Exception) -> Response:
    return internal_error(request.url.path, exc)


def unencodable_problem(e: UnencodableValue, what: str = "body") -> ProblemError:
    """A number no JSON the service writes can carry: refused before anything evaluates it."""
    return ProblemError(
        422, "unencodable-number", "Number out of range", f"{what}: {e}", [{"path": e.path, "message": str(e)}]
    )
