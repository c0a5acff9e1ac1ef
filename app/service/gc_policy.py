"""The service process's garbage-collector policy (--gc-thresholds, --gc-freeze).

A live model holds every watched object as Python containers (hundreds of thousands of them for
a few thousand workloads), and Python's collector traverses what it holds: a full collection
walks them all, and with its default thresholds (700, 10, 10) the young collections run every
few hundred allocations, i.e. several times per parsed 16 KB object.  Two measures:

- thresholds: fewer, larger young collections (most of an interpretation's temporaries are
  freed by reference counting before one runs, so there is less left to traverse);
- freezing: once a model has synced, and again after it relisted, one full collection and then
  `gc.freeze()`: what survives is the model's long-lived state, moved out of the generations the
  collector walks.  Each settle first unfreezes, so garbage that a frozen object became since
  the last one (a cycle among objects the model has dropped) is collected then: the frozen set
  is re-made from live objects each time, and what it holds stays bounded by what is alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger("wlmap.gc")

PYTHON_THRESHOLDS = (700, 10, 10)  # CPython 3.11's own


class Settling(Protocol):
    """What the policy reads of a model: whether it has synced, and how many lists its informers
    have completed (a relist replaces many of its objects at once)."""

    @property
    def synced_at(self) -> float | None: ...

    @property
    def lists(self) -> int: ...


def parse_thresholds(text: str) -> tuple[int, int, int]:
    """`N,N,N` as gc.set_threshold takes them; ValueError for anything else."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or int(parts[0]) == 0:
        raise ValueError(f"gc thresholds must be three non-negative integers N,N,N with N > 0 first, not {text!r}")
    a, b, c = (int(p) for p in parts)
    return a, b, c


@dataclass(frozen=True)
class CollectorPolicy:
    thresholds: tuple[int, int, int]
    freeze: bool

    def apply(self) -> None:
        """At the process's start, before the models fill."""
        gc.set_threshold(*self.thresholds)
        log.info(
            "collector thresholds %s; after a model's sync or relist: %s",
            ",".join(map(str, self.thresholds)),
            "collect and freeze" if self.freeze else "nothing",
        )

    def settle(self) -> float:
        """Collect everything once and freeze what is alive (no-op without --gc-freeze); the
        seconds it took (one full collection over the whole heap)."""
        if not self.freeze:
            return 0.0
        t = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return time.perf_counter() - t

    async def watch(self, models: Callable[[], Iterable[Settling]], stop: asyncio.Event, every: float = 2.0) -> None:
        """Settle whenever a model has synced, or relisted, since the last look (a fleet's
        clusters sync at their own pace; a model that was replaced counts anew)."""
        if not self.freeze:
            return
        seen: dict[int, tuple[bool, int]] = {}
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), every)
            now = {id(m): (m.synced_at is not None, m.lists) for m in models()}
            if any(state[0] and seen.get(key) != state for key, state in now.items()):
                took = self.settle()
                log.info("collected and froze the models' objects in %.3f s (%d frozen)", took, gc.get_freeze_count())
            seen = now
