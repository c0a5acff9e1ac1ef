"""The store's problem for readers, importable without the Redis client (the single process never loads it)."""

from __future__ import annotations

from ..problem import ProblemError


def store_unavailable(e: BaseException | None = None) -> ProblemError:
    why = f": {type(e).__name__}" + (f" ({e})" if str(e) else "") if e is not None else ""
    return ProblemError(503, "store-unavailable", "Store unavailable",
                        f"the shared store (--store) does not answer{why}; no answer is given rather than a stale one",
                        headers={"Retry-After": "2"})
