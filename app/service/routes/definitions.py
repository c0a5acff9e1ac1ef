"""GET /definitions, /definitions/{name}; POST /definitions/validate."""

from __future__ import annotations

from typing import Any

import yaml
from fastapi import APIRouter, Request
from starlette.responses import Response

from ...engine.compiled import evaluation as evaluation_of
from ...karta.load import NotAKarta, definition_from_document
from ...karta.store import summary
from ...karta.validate import reference_text
from ..bodies import JSON, YAML_TYPES, decode, dumps, media_type
from ..models import DefinitionList, ValidationResponse
from ..problems import ProblemError
from .common import PROBLEMS, ServiceDep

router = APIRouter(tags=["definitions"])


@router.get(
    "/definitions",
    response_model=DefinitionList,
    operation_id="listDefinitions",
    summary="Every definition: source, digest, state and findings",
)
async def list_definitions(service: ServiceDep) -> Response:
    sources: list[dict[str, Any]] = [{"name": "builtin", "state": "static"}]
    sources += [{"name": str(p), "state": "watching"} for p in service.store.folders]
    if service.cluster is not None:
        sources[1:1] = service.cluster.source_status()
    for src in sources:
        state = service.store.sources.get(src["name"])
        src["problems"] = list(state.problems) if state else []
    return dumps({"items": service.store.summaries(), "sources": sources})


@router.get(
    "/definitions/{name}",
    operation_id="getDefinition",
    responses={
        200: {
            "description": "the Karta (JSON, or YAML with Accept: application/yaml)",
            "content": {
                JSON: {"schema": {"type": "object", "additionalProperties": True}},
                "application/yaml": {"schema": {"type": "string"}},
            },
        },
        **PROBLEMS,
    },
    summary="One definition as served (the active one of that name)",
)
async def get_definition(name: str, request: Request, service: ServiceDep, evaluation: bool = False) -> Response:
    """`evaluation=true`: how each expression is evaluated instead, natively (in Python, on
    the parsed object) or through libjq, and why not natively."""
    d = service.store.registry.by_name(name)
    if d is None:
        raise ProblemError(404, "no-definition", "No definition", f'no Karta definition named "{name}"')
    if evaluation:
        return dumps(evaluation_of(d))
    accept = request.headers.get("accept", "")
    if any(t in accept for t in YAML_TYPES):
        return Response(yaml.safe_dump(d.raw, sort_keys=False, allow_unicode=True), media_type="application/yaml")
    return dumps(d.raw)


VALIDATE_BODY = {
    "required": True,
    "content": {
        JSON: {
            "schema": {
                "anyOf": [
                    {"type": "object", "additionalProperties": True},
                    {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                ]
            }
        },
        "application/yaml": {"schema": {"type": "string"}},
    },
}


@router.post(
    "/definitions/validate",
    operation_id="validateDefinitions",
    response_model=ValidationResponse,
    responses=PROBLEMS,
    summary="Validate definitions: every finding, in the reference wording",
    openapi_extra={"requestBody": VALIDATE_BODY},
)
async def validate_endpoint(request: Request) -> Response:
    docs = decode(await request.body(), media_type(request))
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    items = []
    for i, doc in enumerate(docs):
        try:
            d = definition_from_document(doc, "inline", f"document {i}")
        except NotAKarta as e:
            raise ProblemError(422, "not-a-definition", "Not a Karta definition", str(e)) from None
        s = summary(d, "invalid" if not d.valid else "active")
        items.append(
            {
                "valid": d.valid,
                "name": d.name or None,
                "gvk": str(d.karta.root_gvk) if d.karta.root_gvk else None,
                "errors": s["errors"],
                "warnings": s["warnings"],
                "referenceText": reference_text(d.findings),
            }
        )
    return dumps({"items": items})
