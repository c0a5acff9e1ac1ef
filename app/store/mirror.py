"""The API side's view of the store: the rows of every unit, kept by following the store's stream.

One `StoreHub` per process loads every unit's rows once, then follows the Redis Stream: each
entry updates the rows it names and becomes an event of `StoreLog`, the event log the streams
read (app/service/streams.py), whose sequence numbers are the stream's entry ids, so a resume
token issued by any replica resumes on any other.  Lists read the rows held here; one workload's
full answer is read from the store at each request (reads.py).  The units' `meta` (owner,
heartbeat, sync state) is polled every second.

When the store does not answer, `connected` turns false and every read is refused (503), never
answered with rows that may be stale; every open stream is told to resume.  When it answers
again, the hub continues from its last entry when the stream still holds it, else loads again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from ..cluster.informer import Backoff, sleep_or_stop
from ..model.events import Event, Subscription, TokenError
from . import keys
from .capacity import UnitCapacity, read_unit
from .connection import ERRORS
from .errors import StoreUnavailable

log = logging.getLogger("wlmap.store")

META_POLL = 1.0  # seconds between polls of the units' meta
CATCH_UP = 2.0  # seconds a resume may wait for this replica to reach a token another replica issued


class StoreLog:
    """EventLog's interface over the store's stream (see model/events.py for the contract)."""

    def __init__(self, hub: StoreHub, history: int = 20000):
        self.hub, self.history = hub, history
        self.seq = 0  # the last entry applied
        self.first = 0  # the oldest entry the stream holds (older tokens are too old)
        self.ring: deque[Event] = deque(maxlen=history)
        self.subscribers: set[Subscription] = set()

    def token(self, seq: int | None = None) -> str:
        return keys.seq_to_id(self.seq if seq is None else seq)

    def parse(self, token: str) -> int:
        try:
            return keys.id_to_seq(token)
        except ValueError:
            raise TokenError(
                400 if "-" in token or token.isdigit() else 410,
                f"malformed resume token {token!r}"
                if "-" in token or token.isdigit()
                else "the resume token was not issued by a replica of this store; list again",
            ) from None

    def publish(
        self,
        type_: str,
        key: tuple[str, str, str, str],
        obj: Any,
        resource: tuple[str, str],
        cluster: str | None = None,
    ) -> Event:
        """An event of this process only (the fleet's cluster items): it takes the current token."""
        ev = Event(self.seq, type_, key, obj, resource, cluster, local=True)
        for sub in list(self.subscribers):
            sub.offer(ev)
        return ev

    def apply(self, ev: Event) -> None:
        self.seq = max(self.seq, ev.seq)
        self.ring.append(ev)
        for sub in list(self.subscribers):
            sub.offer(ev)

    def subscribe(self, accept: Callable[[Event], bool], size: int = 1000) -> Subscription:
        sub = Subscription(self, accept, size)
        self.subscribers.add(sub)
        return sub

    def since(self, seq: int) -> list[Event]:
        if seq < self.first:
            raise TokenError(
                410,
                "the resume token is from before the store's oldest change (it keeps the last "
                "--store-stream-length changes, and none from before it restarted); list again",
            )
        if seq == self.seq:
            return []
        oldest = self.ring[0].seq if self.ring else self.seq + 1
        if seq < oldest - 1:
            raise TokenError(410, "the resume token is older than this replica's window; list again")
        return [e for e in self.ring if e.seq > seq]

    async def after(self, token: str) -> list[Event]:
        """The events after `token`: from memory when this replica saw them, else from the store
        (a token issued by another replica, or before this one started)."""
        seq = self.parse(token)
        deadline = time.monotonic() + CATCH_UP
        while seq > self.seq and time.monotonic() < deadline:  # another replica is ahead: wait for ours
            await asyncio.sleep(0.05)
        if seq > self.seq:
            raise TokenError(410, "the resume token is newer than anything the store holds; list again")
        if seq < self.first:
            return self.since(seq)  # 410
        with contextlib.suppress(TokenError):
            return self.since(seq)
        try:
            return await self.hub.read_after(seq)
        except ERRORS as e:
            raise StoreUnavailable(e) from None

    def end_all(self) -> None:
        """The store went away: every stream is told to resume (its buffer is dropped)."""
        for sub in list(self.subscribers):
            sub.overflowed = True
            sub.wake.set()


class StoreHub:
    def __init__(self, redis: Any, *, buckets: int = 1, labelled: bool = False, history: int = 20000):
        self.redis, self.buckets, self.labelled = redis, buckets, labelled
        self.log = StoreLog(self, history)
        self.rows: dict[str, dict[str, dict[str, Any]]] = {}  # unit -> row field -> row
        self.facts: dict[str, dict[str, Any]] = {}  # unit -> row field -> facts
        self.meta: dict[str, dict[str, str]] = {}  # unit -> meta
        self.clusters: dict[str, Any] = {}  # cluster -> its StoreModel (reads.py)
        self.connected = False
        self.error: str | None = None
        self.now_ms = 0  # the store's clock at the last meta poll (heartbeats are on it too)
        self.loaded_units: set[str] = set()
        self._last_id = "0-0"
        # unit -> its capacity as last read (capacity.py); `capacity_gen` moves with every change
        self.capacity: dict[str, UnitCapacity] = {}
        self.capacity_gen = 0
        self._capacity_due: set[str] = set()

    def units(self, cluster: str) -> list[str]:
        return keys.units_of(cluster, self.buckets)

    def register(self, cluster: str, model: Any) -> None:
        self.clusters[cluster] = model

    # -- following the store ------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff(base=0.2, cap=5.0)
        while not stop.is_set():
            try:
                await self._load()
                self.connected, self.error = True, None
                backoff.reset()
                await self._follow(stop)
            except Exception as e:
                if isinstance(e, ERRORS):
                    if self.connected:
                        log.warning("store: lost (%s); reads answer 503 until it is back", type(e).__name__)
                else:  # an entry this replica cannot read: load everything again rather than guess
                    log.exception("store: following the stream failed; loading again")
                    self.loaded_units.clear()
                self.connected, self.error = False, f"{type(e).__name__}: {e}"
                self.log.end_all()
                await sleep_or_stop(stop, backoff.next())

    async def _load(self) -> None:
        """Continue from the last entry when the stream still holds it; else load every unit."""
        first = await self.redis.xrange(keys.STREAM, "-", "+", count=1)
        last = await self.redis.xrevrange(keys.STREAM, "+", "-", count=1)
        first_seq = keys.id_to_seq(first[0][0]) if first else 0
        if self.loaded_units and self.log.seq and first and first_seq <= self.log.seq:
            self.log.first = first_seq
            return  # the stream still reaches back to where we were: _follow replays what we missed
        # Loaded anew: no token this replica issued before can be resumed here (the changes between
        # it and now are not known: the store may have restarted empty), nor any older than the stream.
        had = self.log.seq
        self.rows.clear()
        self.facts.clear()
        self.loaded_units.clear()
        self._last_id = last[0][0].decode() if last else "0-0"
        await self._load_units([u for c in self.clusters for u in self.units(c)])
        await self._poll_meta()
        if last:
            self.log.seq = max(self.log.seq, keys.id_to_seq(self._last_id))
        self.log.first = max(first_seq, had + 1 if had else 0)
        self.log.ring.clear()

    async def _load_units(self, units: list[str]) -> None:
        if not units:
            return
        async with self.redis.pipeline(transaction=False) as p:
            for u in units:
                p.hgetall(keys.key(u, "rows"))
                p.hgetall(keys.key(u, "facts"))
            got = await p.execute()
        for i, u in enumerate(units):
            rows, facts = got[2 * i], got[2 * i + 1]
            self.rows[u] = {k.decode(): orjson.loads(v) for k, v in rows.items()}
            self.facts[u] = {k.decode(): orjson.loads(v) for k, v in facts.items()}
            self.loaded_units.add(u)

    async def _poll_meta(self) -> None:
        units = [u for c in self.clusters for u in self.units(c)]
        async with self.redis.pipeline(transaction=False) as p:
            p.time()
            for u in units:
                p.hgetall(keys.key(u, "meta"))
            got = await p.execute()
        sec, usec = got[0]
        self.now_ms = int(sec) * 1000 + int(usec) // 1000
        self.meta = {u: {k.decode(): v.decode() for k, v in m.items()} for u, m in zip(units, got[1:], strict=False)}
        new = [u for u in units if u not in self.loaded_units]
        if new:  # a cluster registered since the load (a new Secret)
            await self._load_units(new)
        # a CAPACITY entry missed (a load, a gap), or capacity gone with the store's data
        moved = [u for u in units if (self.meta[u].get("capacity") or "") != self._capacity_version(u)]
        if moved:
            await self._refresh_capacity(moved)

    def _capacity_version(self, unit: str) -> str:
        c = self.capacity.get(unit)
        return str(c.head.get("v") or "") if c is not None else ""

    async def _refresh_capacity(self, units: list[str]) -> None:
        """Read the units' capacity: `cap` always, `nodes` when its version moved."""
        async with self.redis.pipeline(transaction=False) as p:
            for u in units:
                p.hmget(keys.key(u, "cap"), ["head", "usage"])
            got = await p.execute()
        heads = {u: orjson.loads(h) if h else None for u, (h, _) in zip(units, got, strict=True)}
        held = {u: c.head.get("nv") for u, c in self.capacity.items()}
        renew = [u for u, h in heads.items() if h and (u not in held or held[u] != h.get("nv"))]
        nodes: dict[str, Any] = {}
        if renew:
            async with self.redis.pipeline(transaction=False) as p:
                for u in renew:
                    p.hgetall(keys.key(u, "nodes"))
                nodes = dict(zip(renew, await p.execute(), strict=True))
        for u, (_, usage) in zip(units, got, strict=True):
            c = read_unit(heads[u], usage, nodes.get(u), self.capacity.get(u))
            if c is None:
                self.capacity.pop(u, None)
            else:
                self.capacity[u] = c
        self.capacity_gen += 1

    async def _follow(self, stop: asyncio.Event) -> None:
        polled = 0.0
        while not stop.is_set():
            if time.monotonic() - polled >= META_POLL:
                await self._poll_meta()
                polled = time.monotonic()
            got = await self.redis.xread({keys.STREAM: self._last_id}, count=1000, block=500)
            entries = got[0][1] if got else []
            facts_due: dict[str, list[str]] = {}
            for sid, data in entries:
                self._last_id = sid.decode()
                ev = self._entry(keys.id_to_seq(sid), data, facts_due)
                if ev is not None:
                    self.log.apply(ev)
                else:
                    self.log.seq = max(self.log.seq, keys.id_to_seq(sid))
            if facts_due:
                await self._refresh_facts(facts_due)
            if self._capacity_due:
                due, self._capacity_due = sorted(self._capacity_due), set()
                await self._refresh_capacity(due)

    def _entry(self, seq: int, data: dict[bytes, bytes], facts_due: dict[str, list[str]] | None) -> Event | None:
        t = data.get(b"t", b"").decode()
        if t == "CAPACITY":
            if facts_due is not None:  # followed, not read back for a resume
                self._capacity_due.add(data[b"u"].decode())
            return None
        if t not in ("ADDED", "MODIFIED", "DELETED", "INTERPRETED"):
            return None  # the stream's first entry (EPOCH)
        unit, cluster, field = data[b"u"].decode(), data[b"c"].decode(), data[b"k"].decode()
        key = keys.parse_row_field(field)
        model = self.clusters.get(cluster)
        if t == "INTERPRETED":
            if model is not None and facts_due is not None:
                model.changed(key)
            return None
        row = orjson.loads(data[b"o"]) if data.get(b"o") else None
        if facts_due is not None:
            rows = self.rows.setdefault(unit, {})
            if t == "DELETED":
                rows.pop(field, None)
                self.facts.get(unit, {}).pop(field, None)
            else:
                # shards write every ADDED and MODIFIED with its row: one without is an entry
                # this replica cannot read, and run() loads everything again
                if row is None:
                    raise ValueError(f"store stream entry {seq}: {t} {field} carries no row")
                rows[field] = row
                facts_due.setdefault(unit, []).append(field)
            if model is not None:
                model.changed(key)
        group, _, plural = data.get(b"r", b"").decode().partition("|")
        return Event(seq, t, key, row, (group, plural), cluster if self.labelled else None)

    async def _refresh_facts(self, due: dict[str, list[str]]) -> None:
        async with self.redis.pipeline(transaction=False) as p:
            for u, fields in due.items():
                p.hmget(keys.key(u, "facts"), fields)
            got = await p.execute()
        for (u, fields), values in zip(due.items(), got, strict=False):
            for f, v in zip(fields, values, strict=False):
                if v is not None and f in self.rows.get(u, {}):
                    self.facts.setdefault(u, {})[f] = orjson.loads(v)

    async def read_after(self, seq: int) -> list[Event]:
        """Events after `seq`, read from the store's stream (410 when it no longer reaches back)."""
        first = await self.redis.xrange(keys.STREAM, "-", "+", count=1)
        if not first or keys.id_to_seq(first[0][0]) > seq:
            raise TokenError(
                410,
                "the resume token is too old (the store keeps the last --store-stream-length "
                "changes, and none from before it restarted); list again",
            )
        out: list[Event] = []
        start = "(" + keys.seq_to_id(seq)
        end = keys.seq_to_id(self.log.seq)
        while True:
            got = await self.redis.xrange(keys.STREAM, start, end, count=1000)
            for sid, data in got:
                ev = self._entry(keys.id_to_seq(sid), data, None)
                if ev is not None:
                    out.append(ev)
            if len(out) > self.log.history:  # what one resume may hold, as a replica's own window
                raise TokenError(410, f"the resume token is more than {self.log.history} changes behind; list again")
            if len(got) < 1000:
                return out
            start = "(" + got[-1][0].decode()
