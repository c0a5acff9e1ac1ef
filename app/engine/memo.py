"""A bounded cache for the engine's hot paths.

A plain dict: its reads and writes are single C operations (atomic under the GIL, so no lock),
unlike cachetools' LRUCache, whose Python-level bookkeeping and the lock around it cost more
than the lookups they guard.  When full it is dropped whole: the entries are per definition or
per pod template, few and cheap to rebuild."""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V]):
    def __init__(self, maxsize: int):
        super().__init__()
        self.maxsize = maxsize

    def put(self, key: K, value: V) -> V:
        self[key] = value
        if len(self) > self.maxsize:
            self.clear()
        return value
