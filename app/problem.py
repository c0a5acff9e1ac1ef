"""RFC 9457 problem details as a plain dict: the error shape of the API and of `wlmap -o jsonl`
(the service raises them as app/service/problems.py: ProblemError)."""

from __future__ import annotations

from typing import Any


def problem_body(
    status: int,
    slug: str,
    title: str,
    detail: str,
    instance: str | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    p: dict[str, Any] = {"type": f"urn:wlmap:problem:{slug}", "title": title, "status": status, "detail": detail}
    if instance is not None:
        p["instance"] = instance
    if errors:
        p["errors"] = errors
    return p
