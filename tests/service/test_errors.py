"""The lower layers' errors as the API says them: one table (app/service/errors.py), the same
document whether a handler, the /interpret fast path or a batch item meets the error."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from starlette.requests import Request

from app.cluster.reader import LookupFailed
from app.model.capacity import CapacityUnavailable
from app.model.events import TokenError
from app.model.protocol import NotSynced
from app.service.errors import DOMAIN_ERRORS, on_domain_error, problem_of
from app.service.problems import ProblemError
from app.store.errors import AnswerPending, StoreUnavailable

CASES: list[tuple[Exception, int, str, str, str, dict[str, str]]] = [
    (StoreUnavailable(), 503, "store-unavailable", "Store unavailable",
     "the shared store (--store) does not answer; no answer is given rather than a stale one", {"Retry-After": "2"}),
    (StoreUnavailable(ConnectionError("refused")), 503, "store-unavailable", "Store unavailable",
     "the shared store (--store) does not answer: ConnectionError (refused); no answer is given rather than a "
     "stale one", {"Retry-After": "2"}),
    (AnswerPending("JobSet", "team-a", "train"), 503, "answer-pending", "Answer being computed",
     "JobSet team-a/train: its shard is computing its answer; try again in a moment", {"Retry-After": "1"}),
    (NotSynced("cluster b: no shard has synced it into the store yet"), 503, "cluster-not-synced",
     "Cluster not synced yet", "cluster b: no shard has synced it into the store yet", {"Retry-After": "2"}),
    (LookupFailed(404, "workload-not-found", 'JobSet "x" not found'), 404, "workload-not-found", "Not found",
     'JobSet "x" not found', {}),
    (TokenError(410, "too old"), 410, "resume-token-expired", "Resume token too old", "too old", {}),
    (TokenError(400, "malformed"), 400, "malformed-resume-token", "Malformed resume token", "malformed", {}),
    (CapacityUnavailable("the node list has not arrived yet"), 503, "capacity-unavailable", "Capacity unavailable",
     "the node list has not arrived yet", {"Retry-After": "5"}),
]


@pytest.mark.parametrize(("error", "status", "slug", "title", "detail", "headers"), CASES)
def test_each_error_is_said_as_before(error: Exception, status: int, slug: str, title: str, detail: str,
                                      headers: dict[str, str]) -> None:
    p = problem_of(error)
    assert (p.status, p.slug, p.title, p.detail, p.headers) == (status, slug, title, detail, headers)


def test_the_handler_answers_the_table_s_document() -> None:
    request = Request({"type": "http", "method": "GET", "path": "/workloads/a/b", "headers": [], "query_string": b""})
    resp = asyncio.run(on_domain_error(request, AnswerPending("JobSet", "a", "b")))
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert resp.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = orjson.loads(resp.body)
    assert body == {"type": "urn:wlmap:problem:answer-pending", "title": "Answer being computed", "status": 503,
                    "detail": "JobSet a/b: its shard is computing its answer; try again in a moment",
                    "instance": "/workloads/a/b"}


def test_candidates_of_an_ambiguous_lookup_are_kept() -> None:
    cands = [{"apiVersion": "v1", "kind": "A", "namespace": "n", "name": "x"}]
    assert problem_of(LookupFailed(409, "ambiguous-workload", "two", cands)).extra == {"candidates": cands}


def test_every_table_entry_is_handled_and_nothing_else_is() -> None:
    assert {type(c[0]) for c in CASES} == set(DOMAIN_ERRORS)
    assert problem_of(ProblemError(418, "x", "X", "x")).status == 418  # a service problem is itself
    with pytest.raises(TypeError):
        problem_of(ValueError("not one of ours"))
