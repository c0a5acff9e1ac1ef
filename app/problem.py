"""RFC 9457 problem details as a plain dict: the error shape of the API and of `wlmap -o jsonl`."""

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


class ProblemError(Exception):
    """Raise anywhere in a handler (or below it: the store's readers) to answer with a problem document."""

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
