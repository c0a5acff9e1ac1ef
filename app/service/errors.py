"""The errors of the layers below the service, said as problem documents: one table.

Readers, models and the store raise errors of their own layer (a lookup that failed, a store
that does not answer, an answer still being computed, a model not synced, a resume token that
cannot be resumed); what each is in HTTP (status, `type`, title, headers) is decided here only.
Handlers let them rise: the app's exception handlers and the other places that answer a
problem (the /interpret fast path, a batch item, a fleet's per-cluster part) read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request
from starlette.responses import Response

from ..cluster.reader import LookupFailed
from ..model.capacity import CapacityUnavailable
from ..model.events import TokenError
from ..model.protocol import NotSynced
from ..store.errors import AnswerPending, StoreUnavailable
from .problems import ProblemError, on_problem

_LOOKUP_TITLES = {
    403: "Forbidden",
    404: "Not found",
    409: "Ambiguous workload",
    422: "Invalid request",
    503: "Service unavailable",
}


def lookup_problem(e: LookupFailed) -> ProblemError:
    extra = {"candidates": e.candidates} if e.candidates else None
    return ProblemError(e.status, e.slug, _LOOKUP_TITLES.get(e.status, "Error"), e.message, extra=extra)


def _token_problem(e: TokenError) -> ProblemError:
    expired = e.status == 410
    return ProblemError(
        e.status,
        "resume-token-expired" if expired else "malformed-resume-token",
        "Resume token too old" if expired else "Malformed resume token",
        e.message,
    )


def _store_unavailable(e: StoreUnavailable) -> ProblemError:
    return ProblemError(503, "store-unavailable", "Store unavailable", str(e), headers={"Retry-After": "2"})


def _answer_pending(e: AnswerPending) -> ProblemError:
    return ProblemError(
        503, "answer-pending", "Answer being computed", str(e), headers={"Retry-After": str(e.retry_after)}
    )


def _not_synced(e: NotSynced) -> ProblemError:
    return ProblemError(503, "cluster-not-synced", "Cluster not synced yet", str(e), headers={"Retry-After": "2"})


def _capacity_unavailable(e: CapacityUnavailable) -> ProblemError:
    return ProblemError(503, "capacity-unavailable", "Capacity unavailable", str(e), headers={"Retry-After": "5"})


PROBLEMS: dict[type[Exception], Callable[[Any], ProblemError]] = {
    LookupFailed: lookup_problem,
    TokenError: _token_problem,
    StoreUnavailable: _store_unavailable,
    AnswerPending: _answer_pending,
    NotSynced: _not_synced,
    CapacityUnavailable: _capacity_unavailable,
}

DOMAIN_ERRORS: tuple[type[Exception], ...] = tuple(PROBLEMS)
SAID_ERRORS: tuple[type[Exception], ...] = (ProblemError, *DOMAIN_ERRORS)  # every error a handler may let rise


def problem_of(e: Exception) -> ProblemError:
    """The problem document an error of the service or below is said as (see the table)."""
    if isinstance(e, ProblemError):
        return e
    for cls in type(e).__mro__:
        if cls in PROBLEMS:
            return PROBLEMS[cls](e)
    raise TypeError(f"{type(e).__name__} is not an error the service says as a problem") from e


async def on_domain_error(request: Request, exc: Exception) -> Response:
    return await on_problem(request, problem_of(exc))
