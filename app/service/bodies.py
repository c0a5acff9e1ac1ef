"""Request and answer bodies: the media types the API reads (JSON, YAML) and JSON answers."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from starlette.responses import Response

from ..documents import DocumentError, UnencodableValue, loads_json, parse_documents
from .problems import ProblemError, unencodable_problem

JSON = "application/json"
YAML_TYPES = {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}


def media_type(request: Request) -> str:
    return request.headers.get("content-type", JSON).split(";")[0].strip().lower() or JSON


def decode(body: bytes, media: str, what: str = "body") -> list[Any]:
    # curl's -d default (form-urlencoded) carries JSON in practice: read it as JSON.
    as_json = media in (JSON, "application/x-www-form-urlencoded") or media.endswith("+json")
    if media in YAML_TYPES or as_json:
        try:
            return [loads_json(body)] if as_json else parse_documents(body)
        except UnencodableValue as e:  # a number no JSON can carry: refused before it reaches a worker
            raise unencodable_problem(e, what) from None
        except DocumentError as e:
            raise ProblemError(400, "malformed-body", "Malformed body", f"{what}: {e}") from None
    raise ProblemError(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        f"send application/json or application/yaml, not {media}",
    )


def dumps(v: Any) -> Response:
    return Response(orjson.dumps(v), media_type=JSON)
