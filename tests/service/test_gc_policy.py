"""The process's collector policy (app/service/gc_policy.py): made from the settings, applied at
the start, and a settle (collect, freeze) after a model's sync or relist that keeps what is
alive out of the collector's walks without keeping what has died since."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import ValidationError

from app.service import wiring
from app.service.gc_policy import CollectorPolicy, parse_thresholds
from app.service.settings import Settings

from .conftest import Server


@pytest.fixture
def collector_state() -> Iterator[None]:
    """This test process's collector as it was, after the test."""
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def test_policy_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert wiring.collector(Settings()) == CollectorPolicy((20000, 20, 100), True)
    assert wiring.collector(Settings(gc_thresholds="700,10,10", gc_freeze=False)) == CollectorPolicy(
        (700, 10, 10), False
    )
    monkeypatch.setenv("WLMAP_GC_THRESHOLDS", "5000, 7, 9")
    monkeypatch.setenv("WLMAP_GC_FREEZE", "false")
    assert wiring.collector(Settings.from_env()) == CollectorPolicy((5000, 7, 9), False)
    assert wiring.build(Settings(isolation="none", gc_thresholds="1000,5,5")).collector == CollectorPolicy(
        (1000, 5, 5), True
    )
    for bad in ("700,10", "0,10,10", "700,-1,10", "a,b,c", "700,10,10,10"):
        with pytest.raises(ValidationError):
            Settings(gc_thresholds=bad)
        with pytest.raises(ValueError):
            parse_thresholds(bad)


def test_apply_sets_the_thresholds(collector_state: None) -> None:
    CollectorPolicy((12345, 6, 7), True).apply()
    assert gc.get_threshold() == (12345, 6, 7)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


def test_settle_freezes_what_is_alive_and_frees_what_died_since(collector_state: None) -> None:
    kept, kept_ref = cycle()
    gone, gone_ref = cycle()
    assert CollectorPolicy((700, 10, 10), False).settle() == 0.0 and gc.get_freeze_count() == 0
    policy = CollectorPolicy((700, 10, 10), True)
    policy.settle()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    assert not any(o is kept for o in gc.get_objects())  # out of every generation the collector walks
    del gone
    gc.collect()
    assert gone_ref() is not None  # a frozen cycle that died is not collected meanwhile...
    policy.settle()
    assert gone_ref() is None  # ...but by the next settle, which re-makes the frozen set from live objects
    assert kept_ref() is kept
    assert gc.get_freeze_count() <= frozen  # nothing piles up across settles


@dataclass
class Model:
    synced_at: float | None = None
    lists: int = 0


def test_watch_settles_after_a_sync_and_after_a_relist(collector_state: None) -> None:
    settles: list[float] = []

    class Counting(CollectorPolicy):
        def settle(self) -> float:
            settles.append(time.monotonic())
            return super().settle()

    async def run() -> None:
        a, b = Model(), Model()
        models = [a, b]
        stop = asyncio.Event()
        task = asyncio.create_task(Counting((700, 10, 10), True).watch(lambda: models, stop, every=0.01))

        async def step(n: int) -> None:
            await asyncio.sleep(0.1)
            assert len(settles) == n

        a.lists = 3
        await step(0)  # listing, not synced: nothing yet
        a.synced_at = time.time()
        await step(1)  # synced: once
        await step(1)
        b.lists, b.synced_at = 2, time.time()
        await step(2)  # another cluster's model synced
        a.lists += 1
        await step(3)  # a relist
        models.append(Model(time.time(), 1))
        await step(4)  # a model that replaced one, synced
        stop.set()
        await task

    asyncio.run(run())
    # without --gc-freeze there is nothing to watch: it returns at once (no stop is ever set)
    asyncio.run(CollectorPolicy((700, 10, 10), False).watch(lambda: [Model(time.time(), 1)], asyncio.Event()))


def test_a_service_settles_once_its_model_has_synced(service: Server) -> None:
    """The suite's service (the settings' defaults) on the real kube-apiserver: the thresholds are
    set at the start, and the model's objects frozen once it has synced."""
    deadline = time.monotonic() + 30
    while "collected and froze" not in (out := service.output()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "collector thresholds 20000,20,100; after a model's sync or relist: collect and freeze" in out
    synced, froze = out.find("synced in"), out.find("collected and froze the models' objects")
    assert 0 <= synced < froze, out[-3000:]
