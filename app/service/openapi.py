"""The OpenAPI document: the schemas hand-parsed bodies refer to, and errors as problem+json."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from .bodies import JSON
from .models import (
    CAPACITY_EXAMPLE,
    FIT_EXAMPLE,
    NODE_EXAMPLE,
    DefinitionSummary,
    FitRequest,
    InterpretRequest,
    WatchEvent,
)

# Whole answers shown as examples; set after generation, which would drop their nulls.
EXAMPLES = {"ClusterCapacity": CAPACITY_EXAMPLE, "NodeCapacity": NODE_EXAMPLE, "FitResponse": FIT_EXAMPLE}


def patch_openapi(app: FastAPI) -> None:
    """Add the schemas that hand-parsed bodies refer to."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        comps = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in (InterpretRequest, FitRequest, DefinitionSummary, WatchEvent):
            model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, sub in model_schema.pop("$defs", {}).items():
                comps.setdefault(name, sub)
            comps.setdefault(model.__name__, model_schema)
        for name, example in EXAMPLES.items():
            comps[name]["examples"] = [example]
        comps["KubernetesObject"] = {
            "type": "object",
            "title": "KubernetesObject",
            "additionalProperties": True,
            "required": ["apiVersion", "kind"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "additionalProperties": True},
            },
        }
        # Errors are problem+json: move the Problem schema FastAPI filed under application/json.
        for ops in schema.get("paths", {}).values():
            for op in ops.values():
                for code, resp in (op.get("responses") or {}).items():
                    content = resp.get("content") or {}
                    if code.startswith(("4", "5")) and "application/problem+json" in content:
                        sch = content.pop(JSON, {}).get("schema") or {"$ref": "#/components/schemas/Problem"}
                        content["application/problem+json"] = {"schema": sch}
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
