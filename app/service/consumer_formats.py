"""`?format=kueue|karmada|kai`: an interpretation answered in a consumer's own shape
(docs/api-contract.md, "Consumer formats"); the conversions are app/formats/."""

from __future__ import annotations

from typing import Any

from ..formats import FORMATS, FormatError, render
from .problems import ProblemError

ALLOWED = ", ".join(FORMATS)
FORMAT_DOC = f"answer in a consumer's own shape: one of {ALLOWED}"
# The parameter as the OpenAPI document declares it on routes that read it themselves.
FORMAT_PARAMETER: dict[str, Any] = {
    "name": "format",
    "in": "query",
    "required": False,
    "description": FORMAT_DOC,
    "schema": {"type": "string", "enum": list(FORMATS)},
}


def format_param(value: str | None) -> str | None:
    """The `format` query parameter checked (None: the interpretation itself)."""
    if value is None:
        return None
    if value not in FORMATS:
        raise ProblemError(400, "unknown-format", "Unknown format", f"format must be one of {ALLOWED}, not {value!r}")
    return value


def consumer_format(fmt: str, interpretation: dict[str, Any]) -> dict[str, Any]:
    """The interpretation (made with the engine's `templates=True`) in `fmt`'s shape; 422 when
    the consumer cannot take the workload, or a part its shape needs did not interpret."""
    try:
        return render(fmt, interpretation)
    except FormatError as e:
        raise ProblemError(422, e.slug, e.title.format(fmt=fmt), str(e), e.errors) from None
