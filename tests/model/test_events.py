"""Resume tokens, history bounds and slow subscribers of the model's event log."""

from __future__ import annotations

import asyncio

import pytest

from app.model.events import EventLog, TokenError

KEY = ("g", "K", "ns", "n")


def test_tokens_resume_exactly_after_the_last_event_seen() -> None:
    log = EventLog(history=5)
    seqs = [log.publish("ADDED" if i == 0 else "MODIFIED", KEY, {"i": i}, ("g", "ks")).seq for i in range(4)]
    token = log.token(seqs[1])
    assert [e.object["i"] for e in log.since(log.parse(token))] == [2, 3]
    assert log.since(log.parse(log.token())) == []


def test_a_token_older_than_the_history_is_gone() -> None:
    log = EventLog(history=3)
    first = log.publish("ADDED", KEY, {}, ("g", "ks")).seq
    for _ in range(5):
        log.publish("MODIFIED", KEY, {}, ("g", "ks"))
    with pytest.raises(TokenError) as e:
        log.since(log.parse(log.token(first)))
    assert e.value.status == 410 and "too old" in e.value.message
    assert len(log.since(log.seq - 3)) == 3  # the oldest still held resumes fine


def test_tokens_of_another_process_or_malformed_ones_are_refused() -> None:
    a, b = EventLog(), EventLog()
    a.publish("ADDED", KEY, {}, ("g", "ks"))
    with pytest.raises(TokenError) as e:
        b.parse(a.token())
    assert e.value.status == 410
    with pytest.raises(TokenError) as e:
        a.parse("nonsense")
    assert e.value.status == 400
    with pytest.raises(TokenError) as e:
        a.parse(f"{a.epoch}.999")
    assert e.value.status == 410


def test_a_subscriber_that_falls_behind_is_cut_off_and_holds_no_events() -> None:
    async def run() -> None:
        log = EventLog()
        slow = log.subscribe(lambda e: True, size=10)
        fast = log.subscribe(lambda e: e.object["i"] % 2 == 0, size=100)
        for i in range(50):
            log.publish("MODIFIED", KEY, {"i": i}, ("g", "ks"))
        assert slow.overflowed and slow.queue.qsize() == 0
        assert await slow.next(0.01) is None
        got = []
        while (ev := await fast.next(0.01)) is not None:
            got.append(ev.object["i"])
        assert got == list(range(0, 50, 2)) and not fast.overflowed
        slow.close()
        assert slow not in log.subscribers

    asyncio.run(run())
