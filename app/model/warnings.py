"""The model's recent Warning Events, indexed by the object they are about, with bounded memory.

Watched with `fieldSelector=type=Warning` (Normal events, the bulk, never reach the process).
What is kept is bounded three ways, so an event storm costs a known amount of memory:

* by age: an event last seen more than `max_age` seconds ago is not kept, and is dropped when
  it gets that old (the API server's own TTL is an hour by default);
* per object: the `per_object` most recent events of each object (a crash-looping pod's
  kubelet updates one Event's count; distinct events per object are few unless something spams);
* in total: `max_events`, the least recently seen evicted first.

An event evicted from the index is also dropped from the informer's copy (`Informer.forget`),
so the two stay the same size; if the API server updates it later it comes back as new.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..cluster.diagnosis import (
    EVENT_MAX_AGE,
    WarningEvent,
    recent,
    seconds,
    warning_event,
)

Key = tuple[str, str]  # the informer's key of an Event: (namespace, name)


@dataclass(slots=True)
class Kept:
    """An Event as the informer holds it (`rv` lets the informer tell versions apart)."""

    rv: str
    event: WarningEvent

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Kept) and other.rv == self.rv


class WarningEvents:
    def __init__(
        self,
        *,
        per_object: int = 10,
        max_events: int = 10000,
        max_age: float = EVENT_MAX_AGE,
        forget: Callable[[Key], None] | None = None,
    ):
        self.per_object, self.max_events, self.max_age = per_object, max_events, max_age
        self.forget = forget or (lambda key: None)  # drop an evicted event from the informer's copy
        self.by_uid: dict[str, dict[Key, WarningEvent]] = {}
        self._order: OrderedDict[Key, str] = OrderedDict()  # key -> uid, least recently seen first
        self._evicted: list[Key] = []
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._order)

    # -- the informer's side ----------------------------------------------------------------
    def keep(self, obj: dict[str, Any]) -> Kept | None:
        ev = warning_event(obj)
        if ev is None or not recent(ev, self.max_age):
            return None
        return Kept(str((obj.get("metadata") or {}).get("resourceVersion") or ""), ev)

    def on_event(self, type_: str, key: Key, old: Kept | None, new: Kept | None) -> set[str]:
        """Apply an informer event; returns the UIDs of the objects whose events changed."""
        changed: set[str] = set()
        if old is not None:
            self._remove(key, old.event.uid)
            changed.add(old.event.uid)
        if new is not None:
            uid = new.event.uid
            mine = self.by_uid.setdefault(uid, {})
            mine[key] = new.event
            self._order[key] = uid
            self._order.move_to_end(key)
            changed.add(uid)
            if len(mine) > self.per_object:
                oldest = min(mine, key=lambda k: seconds(mine[k].last))
                self._evict(oldest, uid)
            while len(self._order) > self.max_events:
                k, u = next(iter(self._order.items()))
                self._evict(k, u)
                changed.add(u)
        if self._evicted:
            asyncio.get_running_loop().call_soon(self._flush)  # not while the informer walks its copy
        return changed

    def prune(self, now: float | None = None) -> set[str]:
        """Drop the events that got too old; returns the UIDs whose events changed."""
        stale = [(k, u) for u, evs in self.by_uid.items() for k, e in evs.items() if not recent(e, self.max_age, now)]
        for k, u in stale:
            self._evict(k, u)
        self._flush()
        return {u for _, u in stale}

    # -- reads ------------------------------------------------------------------------------
    def of(self, uids: set[str] | frozenset[str]) -> list[WarningEvent]:
        at = time.time()
        return [e for u in uids for e in self.by_uid.get(u, {}).values() if recent(e, self.max_age, at)]

    def about(self, uid: str) -> bool:
        return uid in self.by_uid

    # -- inside -----------------------------------------------------------------------------
    def _remove(self, key: Key, uid: str) -> None:
        self._order.pop(key, None)
        mine = self.by_uid.get(uid)
        if mine is not None:
            mine.pop(key, None)
            if not mine:
                del self.by_uid[uid]

    def _evict(self, key: Key, uid: str) -> None:
        self._remove(key, uid)
        self._evicted.append(key)
        self.evictions += 1

    def _flush(self) -> None:
        evicted, self._evicted = self._evicted, []
        for k in evicted:
            if k not in self._order:  # not seen again meanwhile
                self.forget(k)
