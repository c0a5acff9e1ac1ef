"""Lists a UI can page through: filter, sort and page summary rows (GET /workloads).

`phase=Running,Failed`, `labelSelector=` (Kubernetes syntax, on the workload's labels),
`minGpus=`, `sort=name | namespace | -gpus | gpus | age | -age | phase | -phase` (`age` is the
youngest first, as kubectl's AGE column reads; `-age` the oldest first), `limit=` with a
`continue` token.  Paging is by key, not by offset: the token holds the sort key of the last row
sent, so a page boundary stays put while rows are added or removed elsewhere (no row is sent
twice, none that stayed is skipped).  A token is good only for the query that made it.

Pure: rows in, rows out; the readers (model and direct) produce the rows, this orders them.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from .selectors import Selector, SelectorError, parse

MAX_LIMIT = 5000

Key = tuple[Any, ...]


class QueryError(ValueError):
    """A list query that cannot be answered (400); the message says which parameter and why."""


def _ident(r: dict[str, Any]) -> Key:
    w = r["workload"]
    return (
        str(r.get("cluster") or ""),
        str(w.get("namespace") or ""),
        str(w.get("name") or ""),
        str(w.get("kind") or ""),
        str(w.get("apiVersion") or ""),
    )


def _epoch(ts: Any) -> int | None:
    try:
        return int(dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def _gpus(r: dict[str, Any], sign: int) -> Key:
    g = r.get("gpus")
    return (g is None, sign * (g or 0)) + _ident(r)  # unknown counts last either way


def _age(r: dict[str, Any], sign: int) -> Key:
    t = _epoch(r.get("createdAt"))
    return (t is None, sign * (t or 0)) + _ident(r)


def _phase(r: dict[str, Any], sign: int) -> Key:
    p = r.get("phase")
    text = str(p or "")
    # descending text order as an ascending key: each character's complement
    return (p is None, text if sign > 0 else tuple(-ord(c) for c in text) + (1,)) + _ident(r)


SORTS: dict[str, Callable[[dict[str, Any]], Key]] = {
    "name": lambda r: (r["workload"].get("name") or "",) + _ident(r),
    "namespace": _ident,
    "gpus": lambda r: _gpus(r, 1),
    "-gpus": lambda r: _gpus(r, -1),
    "age": lambda r: _age(r, -1),  # youngest first: the newest creationTimestamp
    "-age": lambda r: _age(r, 1),
    "phase": lambda r: _phase(r, 1),
    "-phase": lambda r: _phase(r, -1),
}


@dataclass(frozen=True)
class ListQuery:
    phases: frozenset[str] | None = None
    selector: Selector | None = None
    min_gpus: int | None = None
    sort: str = "namespace"
    limit: int | None = None
    after: Key | None = None
    signature: str = ""

    @property
    def pages(self) -> bool:
        """Asks for an order or a page (lists only; a stream sends changes as they come)."""
        return self.sort != "namespace" or self.limit is not None or self.after is not None

    def keep(self, row: dict[str, Any]) -> bool:
        if self.phases is not None and str(row.get("phase") or "").lower() not in self.phases:
            return False
        if self.min_gpus is not None and (row.get("gpus") or 0) < self.min_gpus:
            return False
        return self.selector is None or self.selector.matches(row.get("labels") or {})

    def apply(self, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
        """The page of rows this query asks for, and the token of the next page (None: the last)."""
        key = SORTS[self.sort]
        keyed = sorted(((key(r), r) for r in rows if self.keep(r)), key=lambda kr: kr[0])
        if self.after is not None:
            keyed = [kr for kr in keyed if kr[0] > self.after]
        if self.limit is None or len(keyed) <= self.limit:
            return [r for _, r in keyed], None
        page = keyed[: self.limit]
        return [r for _, r in page], page_token(self.signature, page[-1][0])


def page_token(signature: str, key: Key) -> str:
    """A continue token: the key of the last row given, good only for the query `signature` names."""
    return base64.urlsafe_b64encode(orjson.dumps({"q": signature, "k": list(key)})).decode().rstrip("=")


def _untoken(signature: str, token: str) -> Key:
    try:
        doc = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not isinstance(doc, dict) or not isinstance(doc.get("k"), list):
            raise ValueError
    except (ValueError, orjson.JSONDecodeError):
        raise QueryError("continue: not a token this service issued") from None
    if doc.get("q") != signature:
        raise QueryError(
            "continue: the token belongs to another query (namespace, kind, filters and sort must "
            "stay the same while paging)"
        )
    return tuple(tuple(x) if isinstance(x, list) else x for x in doc["k"])


def parse_query(
    *,
    phase: str | None = None,
    label_selector: str | None = None,
    min_gpus: int | None = None,
    sort: str | None = None,
    limit: int | None = None,
    continue_: str | None = None,
    scope: tuple[Any, ...] = (),
) -> ListQuery:
    """The query of GET /workloads's parameters; `scope` (namespace, kind, clusters) is part of
    what a continue token is good for.  QueryError names a bad parameter."""
    # any case, as the CLI's --phase and kubectl's field values are typed by hand
    phases = frozenset(p.strip().lower() for p in phase.split(",") if p.strip()) if phase else None
    selector = None
    if label_selector:
        try:
            selector = parse(label_selector)
        except SelectorError as e:
            raise QueryError(f"labelSelector: {e}") from None
    if min_gpus is not None and min_gpus < 0:
        raise QueryError("minGpus: must be 0 or more")
    order = sort or "namespace"
    if order not in SORTS:
        raise QueryError(f"sort: {order!r} is not one of {', '.join(SORTS)}")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit: must be between 1 and {MAX_LIMIT}")
    signature = hashlib.blake2b(
        orjson.dumps([sorted(phases or ()), label_selector or "", min_gpus, order, [str(s) for s in scope]]),
        digest_size=9,
    ).hexdigest()
    after = _untoken(signature, continue_) if continue_ else None
    return ListQuery(phases, selector, min_gpus, order, limit, after, signature)
