"""The routers' shape: what every route costs before its handler runs."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts

from app.service.app import create_app
from app.service.settings import Settings


def _dependencies(dependant: Any) -> Iterator[Any]:
    for d in dependant.dependencies:
        yield d
        yield from _dependencies(d)


def test_every_dependency_is_a_coroutine_function() -> None:
    """FastAPI runs a plain-function dependency on its thread pool: a thread hop on every request
    (measured at a quarter of a millisecond per read of the live model, more than the read itself
    for a small namespace).  So each one the routes declare is `async def`."""
    routes = [c.original_route for c in iter_route_contexts(create_app(Settings()).routes)]
    api = [r for r in routes if isinstance(r, APIRoute)]
    assert len(api) > 20
    seen = {}
    for r in api:
        for d in _dependencies(r.dependant):
            if d.call is not None:
                seen[getattr(d.call, "__qualname__", repr(d.call))] = d.call
    assert {"service_dependency", "list_params"} <= set(seen), sorted(seen)
    plain = sorted(name for name, call in seen.items() if not inspect.iscoroutinefunction(call))
    assert plain == [], f"dependencies run on the thread pool: {plain}"
