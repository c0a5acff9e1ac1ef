"""What every router declares alike: the service a handler acts for, and the error and stream
responses of the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from ..bodies import JSON
from ..models import Problem
from ..service import Service

STREAM_RESPONSE: dict[str, Any] = {
    "description": "the answer; with watch=true a stream of events {type, object, id}",
    "content": {
        "text/event-stream": {"schema": {"type": "string"}},
        "application/json;stream=watch": {"schema": {"$ref": "#/components/schemas/WatchEvent"}},
    },
}
PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "content": {"application/problem+json": {}}}
    for code in (400, 401, 403, 404, 409, 413, 415, 422, 500, 501, 503)
}


def manifest_or_envelope(envelope: str) -> dict[str, Any]:
    """The OpenAPI request body of a route that takes a manifest, or the `envelope` schema, in
    JSON or YAML (the handler parses the body itself)."""
    return {
        "required": True,
        "content": {
            JSON: {
                "schema": {
                    "anyOf": [
                        {"$ref": f"#/components/schemas/{envelope}"},
                        {"$ref": "#/components/schemas/KubernetesObject"},
                    ]
                }
            },
            "application/yaml": {"schema": {"type": "string", "description": "one manifest, or an envelope, as YAML"}},
        },
    }


def get_service(request: Request) -> Service:
    """The service of the app the request came to (create_app sets it)."""
    service: Service = request.app.state.service
    return service


async def service_dependency(request: Request) -> Service:
    # async on purpose, as every dependency here: FastAPI runs a plain function dependency on
    # its thread pool, a thread hop that cost each read a quarter of a millisecond
    return get_service(request)


ServiceDep = Annotated[Service, Depends(service_dependency)]
