"""Bounded caches for the engine's hot paths.

`Memo`: a plain dict: its reads and writes are single C operations (atomic under the GIL, so no
lock), unlike cachetools' LRUCache, whose Python-level bookkeeping and the lock around it cost
more than the lookups they guard.  When full it is dropped whole: the entries are per definition
or per pod template, few and cheap to rebuild.

`ByteLRU`: for caches whose entries a caller chooses (inline definitions, objects sent for
interpretation), where one entry can be megabytes: bounded by the bytes its entries are
accounted at, not by their count, least recently used out first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

import orjson

K = TypeVar("K")
V = TypeVar("V")

# Parsed JSON held as Python objects takes several times its text (a dict is ~200 bytes, a short
# str ~50): accounted sizes are the text's length times a factor, so a bound in bytes is close
# to the memory it holds (measured: 4x for a whole JobSet manifest, ~9x for the small values of
# its jq results, benchmarks/abuse_memory.py "distinct").
PY_OBJECT_FACTOR = 8
DEFINITION_FACTOR = 10  # a parsed definition: its document, Karta model and findings (measured ~9x)
COMPILED_FACTOR = 20  # its compiled form: native programs and batches (measured ~20x, libjq's own C memory aside)


class Memo(dict[K, V]):
    """`max_bytes`: also dropped whole once the sizes given to `put` add up to more (for keys a
    caller chooses, such as a pod template's JSON text, where 4096 entries could be gigabytes);
    an entry over 1/64 of it is not kept (it would empty the cache for one giant)."""

    def __init__(self, maxsize: int, max_bytes: int | None = None):
        super().__init__()
        self.maxsize, self.max_bytes = maxsize, max_bytes
        self.bytes = 0

    def put(self, key: K, value: V, size: int = 0) -> V:
        if self.max_bytes is not None and size > self.max_bytes // 64:
            return value
        self[key] = value
        self.bytes += size
        if len(self) > self.maxsize or (self.max_bytes is not None and self.bytes > self.max_bytes):
            self.clear()
            self.bytes = 0
        return value


def held_bytes(value: Any, factor: int = PY_OBJECT_FACTOR) -> int:
    """What a JSON-like value costs in memory, roughly: its compact JSON length x `factor`."""
    try:
        n = len(orjson.dumps(value))
    except TypeError:  # an integer beyond 64 bits, deep nesting: the slow way, same estimate
        n = len(repr(value))
    return n * factor


class ByteLRU(Generic[K, V]):
    """An LRU cache holding at most `max_bytes`, each entry accounted at the size `put` is given
    (key included).  An entry larger than `max_entry` (default a quarter of the bound) is not
    kept: one caller's giant would flush everyone else's entries for nothing.  Thread-safe."""

    def __init__(self, max_bytes: int, max_entry: int | None = None):
        self.max_bytes = max_bytes
        self.max_entry = max_bytes // 4 if max_entry is None else max_entry
        self.bytes = 0  # accounted size of what is held now
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V, size: int) -> V:
        if size > self.max_entry:
            return value
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._items[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, gone) = self._items.popitem(last=False)
                self.bytes -= gone
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0
