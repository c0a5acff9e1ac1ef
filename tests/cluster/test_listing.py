"""List queries (app/cluster/listing.py): filters, orders and key-based pages of summary rows."""

from __future__ import annotations

from typing import Any

import pytest

from app.cluster.listing import SORTS, QueryError, parse_query


def row(name: str, ns: str = "a", phase: str | None = "Running", gpus: int | None = 0, created: str | None = None,
        labels: dict[str, str] | None = None, kind: str = "JobSet") -> dict[str, Any]:
    return {"workload": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": kind, "namespace": ns, "name": name},
            "phase": phase, "gpus": gpus, "createdAt": created, "labels": labels or {}}


ROWS = [row("w1", gpus=8, created="2026-12-01T10:00:00Z", labels={"team": "a"}),
        row("w2", phase="Pending", gpus=2, created="2026-12-01T12:00:00Z", labels={"team": "b"}),
        row("w3", phase="Failed", gpus=None, created=None, labels={"team": "a", "tier": "gold"}),
        row("w4", ns="b", gpus=16, created="2026-11-30T09:00:00Z"),
        row("w5", phase=None, gpus=0, created="2026-12-01T11:00:00Z", labels={"team": "c"})]


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [r["workload"]["name"] for r in rows]


def test_filters() -> None:
    assert names(parse_query(phase="Running,Failed").apply(ROWS)[0]) == ["w1", "w3", "w4"]
    assert names(parse_query(phase="running, FAILED").apply(ROWS)[0]) == ["w1", "w3", "w4"]  # any case, as --phase
    assert names(parse_query(label_selector="team in (a,b),!tier").apply(ROWS)[0]) == ["w1", "w2"]
    assert names(parse_query(label_selector="team!=a").apply(ROWS)[0]) == ["w2", "w5", "w4"]  # absent matches !=
    assert names(parse_query(min_gpus=8).apply(ROWS)[0]) == ["w1", "w4"]  # unknown counts never pass a minimum
    assert names(parse_query(phase="Running", min_gpus=10).apply(ROWS)[0]) == ["w4"]


@pytest.mark.parametrize("sort,expected", [
    ("namespace", ["w1", "w2", "w3", "w5", "w4"]),
    ("name", ["w1", "w2", "w3", "w4", "w5"]),
    ("-gpus", ["w4", "w1", "w2", "w5", "w3"]),  # unknown last
    ("gpus", ["w5", "w2", "w1", "w4", "w3"]),
    ("age", ["w2", "w5", "w1", "w4", "w3"]),  # youngest first, as kubectl's AGE column
    ("-age", ["w4", "w1", "w5", "w2", "w3"]),
    ("phase", ["w3", "w2", "w1", "w4", "w5"]),
    ("-phase", ["w1", "w4", "w2", "w3", "w5"]),
])
def test_sorts(sort: str, expected: list[str]) -> None:
    assert names(parse_query(sort=sort).apply(ROWS)[0]) == expected


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_pages_cover_every_row_once_and_stay_put_while_rows_come_and_go(sort: str) -> None:
    rows = list(ROWS)
    q = parse_query(sort=sort, limit=2)
    first, token = q.apply(rows)
    assert len(first) == 2 and token
    # between pages a row before the boundary goes and a new one arrives before it
    rows = [r for r in rows if r is not first[0]] + [row("w0", ns="a", gpus=100, created="2026-12-02T00:00:00Z")]
    seen = names(first)
    while token:
        page, token = parse_query(sort=sort, limit=2, continue_=token).apply(rows)
        seen += names(page)
    full = names(parse_query(sort=sort).apply(ROWS)[0])
    assert [n for n in seen if n != "w0"] == full  # each row that was there: once, in order (w0 may come too)


@pytest.mark.parametrize("kwargs,message", [
    ({"sort": "size"}, "sort: 'size' is not one of"),
    ({"limit": 0}, "limit: must be between 1 and"),
    ({"limit": 100000}, "limit: must be between 1 and"),
    ({"min_gpus": -1}, "minGpus: must be 0 or more"),
    ({"label_selector": "team in a"}, "labelSelector:"),
    ({"continue_": "not-a-token"}, "continue: not a token this service issued"),
])
def test_bad_queries_say_which_parameter(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(**kwargs)


def test_a_token_is_good_only_for_its_query() -> None:
    _, token = parse_query(sort="-gpus", limit=1, scope=("a", None, None)).apply(ROWS)
    assert token
    parse_query(sort="-gpus", limit=5, continue_=token, scope=("a", None, None))  # a new page size is fine
    for other in ({"sort": "name"}, {"sort": "-gpus", "phase": "Running"}, {"sort": "-gpus", "scope": ("b", None, None)}):
        with pytest.raises(QueryError, match="another query"):
            parse_query(**{"limit": 1, "continue_": token, "scope": ("a", None, None), **other})


def test_a_filtered_stream_follows_what_its_client_holds() -> None:
    """Stream filters (service/streams.py): a row coming to match is ADDED, one leaving is DELETED
    only to a client that holds it; after a resume what the client holds is unknown, so a
    non-matching change is a DELETED (a no-op for a client without the row)."""
    import asyncio

    from app.model.events import Event
    from app.service.streams import _filtered

    async def visible(ev: Event) -> dict[str, Any]:
        return ev.object  # type: ignore[no-any-return]

    def ev(type_: str, team: str) -> Event:
        return Event(1, type_, ("g", "K", "a", "w1"), row("w1", labels={"team": team}))

    q = parse_query(label_selector="team=a")

    async def run(resumed: bool, events: list[tuple[str, str]]) -> list[str | None]:
        present = _filtered(visible, q, resumed)
        out = []
        for t, team in events:
            sent = await present(ev(t, team), t)
            out.append(sent[0] if sent else None)
        return out

    fresh = [("ADDED", "b"), ("MODIFIED", "a"), ("MODIFIED", "a"), ("MODIFIED", "b"), ("MODIFIED", "b"),
             ("DELETED", "b")]
    assert asyncio.run(run(False, fresh)) == [None, "ADDED", "MODIFIED", "DELETED", None, None]
    assert asyncio.run(run(True, [("MODIFIED", "b"), ("ADDED", "b"), ("DELETED", "b")])) == ["DELETED", None, "DELETED"]
