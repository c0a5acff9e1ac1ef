"""The shard role: watch the units this process claims and keep the store equal to what it sees.

For each cluster with at least one owned unit, a live model (the same one a single process runs)
watches the cluster, keeping only the owned buckets' namespaces.  Once it has synced, the store's
units are made equal to it by differences only (`resync`): what the store already holds from the
previous owner is left as it is, so a takeover or a store that comes back emits no storm of
ADDED events, only what changed meanwhile.  After that every row change and every new live
answer is written as it happens, fenced by the unit's epoch (writer.py), with a heartbeat every
few seconds that tells readers the unit is watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..cluster.informer import Backoff, sleep_or_stop
from ..cluster.workloads import Interpret, now_iso
from ..fleet.fleet import Fleet
from ..fleet.member import Member
from ..jqlang.inputs import exact
from ..karta.registry import Registry
from ..model.events import Event, EventLog
from ..model.live import LiveModel, row_key
from ..model.packing import deflate
from . import answers, keys
from .answers import Written, part_field
from .capacity import CapacityExport
from .connection import ERRORS
from .writer import Fenced, Ops, UnitWriter

if TYPE_CHECKING:
    from .claims import Claims

log = logging.getLogger("wlmap.shard")

HEARTBEAT = 2.0  # seconds between a unit's heartbeats (readers call a unit stale after STALE)
STALE = 6.0  # three heartbeats missed: readers say `watching: false` (the Lease expires later, at 15 s)
EXPORT_BATCH = 32  # live answers computed per pass at most; a row change waiting ends the pass


def _held_rv(sig: bytes | None) -> str | None:
    return sig.partition(b"|")[0].decode() if sig else None


class ClusterPart:
    """The owned buckets of one cluster: their model, writers, and what the store holds of them."""

    def __init__(self, shard: Shard, member: Member, epochs: dict[int, int]):
        self.shard, self.member, self.name = shard, member, member.name
        self.epochs = epochs  # bucket -> epoch of its claim
        self.writers: dict[int, UnitWriter] = {}
        self.known: dict[int, dict[str, bytes]] = {}  # bucket -> row field -> row JSON, as the store holds it
        self.sigs: dict[int, dict[str, bytes]] = {}  # bucket -> row field -> digest of its answer in the store
        # bucket -> row field -> its answer's parts as the store holds them (answers.py), once this
        # shard wrote them or found them equal; `podlists`: the pod lists a previous owner left
        self.written: dict[int, dict[str, Written]] = {}
        self.facts_written: dict[int, dict[str, bytes]] = {}  # bucket -> row field -> metric facts written
        self.podlists: dict[int, dict[str, bytes]] = {}
        self.pending: dict[str, None] = {}  # workload uids whose answer is due
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.model: LiveModel | None = None
        self.need_resync = True
        self.writes = 0
        self.written_rv: int | None = None
        # the cluster's capacity goes to the lowest bucket owned (capacity.py), versioned so no
        # two parts, even of one owner and epoch, write the same version
        self.primary = min(epochs)
        self.capacity = CapacityExport(f"{shard.identity}:{epochs[self.primary]}:{uuid.uuid4().hex[:8]}")

    def bucket(self, namespace: str) -> int:
        return keys.bucket_of(namespace, self.shard.buckets)

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"shard-{self.name}")

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        if self.model is not None:
            await self.model.close()

    async def _run(self) -> None:
        s = self.shard
        while self.member.kube is None and not self.stop.is_set():  # its connection is still being made
            await sleep_or_stop(self.stop, 0.5)
        if self.stop.is_set():
            return
        assert self.member.kube is not None
        m = LiveModel(
            self.member.kube,
            s.registry,
            s.interpret,
            namespaces=s.namespaces,
            cluster=self.name if s.labelled else None,
            events=EventLog(history=1000),
        )
        owned = set(self.epochs)
        if s.buckets > 1:
            m.namespace_filter = lambda ns: keys.bucket_of(ns, s.buckets) in owned
        sub = m.events.subscribe(lambda e: True, size=1_000_000)

        def due(uid: str) -> None:  # a pod-only change moves no row: wake the loop for the answer
            self.pending[uid] = None
            sub.wake.set()

        m.exporter = due

        def capacity_changed(node: str | None) -> None:  # the first change after a write wakes the loop
            if self.capacity.touch(node):
                sub.wake.set()

        m.capacity_inventory.on_change = capacity_changed
        self.model = m
        for b, epoch in self.epochs.items():
            self.writers[b] = UnitWriter(
                s.redis, keys.unit_name(self.name, b, s.buckets), self.name, s.identity, epoch, s.maxlen
            )
        m.start(self.stop)
        backoff = Backoff(base=0.5, cap=10.0)
        last_beat = 0.0
        try:
            while not self.stop.is_set():
                try:
                    if self.need_resync:
                        while not sub.queue.empty():  # the resync compares everything: what waits is moot
                            sub.queue.get_nowait()
                        if m.synced:
                            await self._resync(m)
                            self.need_resync = False
                            backoff.reset()
                        else:
                            await self._beat(m)  # readers learn the unit is owned, not yet watched
                            last_beat = time.monotonic()
                    else:
                        await self._changes(m, sub)
                        await self._capacity(m)
                        if time.monotonic() - last_beat >= HEARTBEAT:
                            await self._beat(m)
                            last_beat = time.monotonic()
                except Fenced as e:
                    log.warning("%s; claiming it again and rewriting it", e)
                    self.need_resync = True
                    await sleep_or_stop(self.stop, backoff.next())
                    continue
                except ERRORS as e:
                    log.warning(
                        "cluster %s: the store does not answer (%s); resyncing when it does",
                        self.name,
                        type(e).__name__,
                    )
                    self.need_resync = True
                    await sleep_or_stop(self.stop, backoff.next())
                    continue
                except Exception:
                    log.exception("cluster %s: writing to the store failed; resyncing", self.name)
                    self.need_resync = True
                    await sleep_or_stop(self.stop, backoff.next())
                    continue
                if sub.overflowed:  # more changes than could wait: compare everything again
                    sub.overflowed = False
                    self.need_resync = True
                    continue
                if self.need_resync or (sub.queue.empty() and not self.pending):
                    sub.wake.clear()
                    timeout = 0.25 if self.need_resync else HEARTBEAT / 2
                    cap_due = self.capacity.wait()  # a capacity write held back by the coalescing
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(sub.wake.wait(), timeout if cap_due is None else min(timeout, cap_due))
        finally:
            sub.close()

    # -- writing ------------------------------------------------------------------------------
    async def _write(self, ops: dict[int, Ops], beat: bool = False) -> None:
        for b, o in ops.items():
            if o or beat:
                await self.writers[b].write(o)
                self.writes += 1

    def _meta(self, m: LiveModel) -> Ops:
        o = Ops()
        fresh = m.freshness()
        kinds = [
            [
                kw.resource.group,
                kw.resource.version,
                kw.resource.kind,
                kw.resource.plural,
                kw.resource.namespaced,
                kw.definition.name,
            ]
            for kw in m.kinds.values()
            if kw.definition is not None
        ]
        for f, v in (
            ("synced", b"1" if m.synced and not self.need_resync else b"0"),
            ("watching", b"1" if fresh["watching"] and not self.need_resync else b"0"),
            ("observedAt", fresh["observedAt"]),
            *((("resourceVersion", str(m.applied_rv)),) if m.applied_rv is not None and not self.pending else ()),
            # the kinds once listed: a new owner's model knows none before its first sync,
            # and readers find workloads by them (the previous owner's stay meanwhile)
            *((("kinds", orjson.dumps(kinds)),) if m.synced else ()),
            ("error", m.error() or ""),
            *((("everSynced", b"1"),) if m.synced and not self.need_resync else ()),
            ("namespaces", orjson.dumps(m.namespaces)),
            ("buckets", str(self.shard.buckets)),
        ):
            o.hset("meta", f, v)
        return o

    async def _beat(self, m: LiveModel) -> None:
        if self.need_resync:  # owned, not yet in step: say so (the claim makes this shard the writer)
            for w in self.writers.values():
                await w.claim()
        await self._write({b: self._meta(m) for b in self.writers}, beat=True)

    async def _resync(self, m: LiveModel) -> None:
        """Make the store's units equal to the model, by differences only."""
        for w in self.writers.values():
            await w.claim()
        for b, w in self.writers.items():
            self.known[b], self.sigs[b], self.podlists[b] = await w.held()
            self.written[b], self.facts_written[b] = {}, {}
        self.capacity.held(await self.writers[self.primary].held_nodes())
        ops = {b: Ops() for b in self.writers}
        for b, o in ops.items():  # another bucket's shard may have written capacity there: ours counts it
            if b != self.primary:
                o.delete("nodes")
                o.delete("cap")
                o.hset("meta", "capacity", "")
                o.xadd("CAPACITY", "")
        current: dict[int, set[str]] = {b: set() for b in self.writers}
        moved: dict[str, None] = {}  # workloads whose row changed while nobody watched
        for row, facts in m.rows():
            g, k, ns, name = row_key(row)
            b = self.bucket(ns)
            if b not in self.writers:
                continue
            field = keys.row_field(g, k, ns, name)
            current[b].add(field)
            if self._row(ops[b], b, "MODIFIED", field, row, facts, self._resource(m, g, k)):
                moved[str((row.get("workload") or {}).get("uid") or "")] = None
        for b, held in self.known.items():
            for field in [f for f in held if f not in current[b]]:
                self._gone(ops[b], b, field)
        for b, held in self.sigs.items():  # answers the store holds for workloads that have no row
            for field in [f for f in held if f not in current[b]]:
                self._gone(ops[b], b, field)
        # every answer is compared with the store's; those of the moved rows first (the rest
        # mostly match what the previous owner wrote)
        everyone = {uid: None for uid, st in m.states.items() if st.row is not None}
        self.pending = {**{u: None for u in moved if u in everyone}, **self.pending, **everyone}
        for o in ops.values():
            self._meta_into(o, m)
        await self._write(ops, beat=True)
        log.info(
            "cluster %s: store units %s in step with the model (%d rows)",
            self.name,
            ",".join(w.unit for w in self.writers.values()),
            sum(len(c) for c in current.values()),
        )

    def _meta_into(self, o: Ops, m: LiveModel) -> None:
        self.need_resync = False  # (the meta says synced once this write lands)
        o.args += self._meta(m).args

    @staticmethod
    def _resource(m: LiveModel, group: str, kind: str) -> str:
        kw = m.kinds.get((group, kind))
        return f"{group}|{kw.resource.plural}" if kw is not None else f"{group}|"

    def _row(
        self, o: Ops, b: int, type_: str, field: str, row: dict[str, Any], facts: dict[str, Any] | None, resource: str
    ) -> bool:
        """The row into `o` when the store holds another (True), else nothing."""
        data = exact(orjson.dumps(row))  # kept: not orjson's KBs-larger buffer
        held = self.known[b].get(field)
        if held == data:
            return False
        o.hset("rows", field, data)
        slim = exact(
            orjson.dumps(
                {"result": {"totals": (facts.get("result") or {}).get("totals")}, "gangMin": facts.get("gangMin")}
                if facts
                else None
            )
        )
        if held is None or self.facts_written[b].get(field) != slim:  # a pod event moves the row, not these
            o.hset("facts", field, slim)
            self.facts_written[b][field] = slim
        o.xadd("ADDED" if held is None else "MODIFIED", field, data, resource)
        self.known[b][field] = data
        return True

    def _gone(self, o: Ops, b: int, field: str) -> None:
        row = self.known[b].pop(field, None)
        for f in ("rows", "facts", "obj", "live", "pods", "warn", "sig"):
            o.hdel(f, field)
        self.sigs[b].pop(field, None)
        for uid in self._pods_held(b, field):
            o.hdel("parts", part_field(field, uid))
        self.written[b].pop(field, None)
        self.facts_written[b].pop(field, None)
        self.podlists[b].pop(field, None)
        if row is not None:
            o.xadd("DELETED", field, row)

    async def _changes(self, m: LiveModel, sub: Any) -> None:
        rv = m.applied_rv  # before draining: what is drained and exported now covers it
        ops = {b: Ops() for b in self.writers}
        n = 0
        new: list[str] = []  # workloads whose first row this pass writes
        while not sub.queue.empty() and n < 2000:
            ev: Event = sub.queue.get_nowait()
            n += 1
            g, k, ns, name = ev.key
            b = self.bucket(ns)
            if b not in self.writers:
                continue
            field = keys.row_field(g, k, ns, name)
            if ev.type == "DELETED":
                self._gone(ops[b], b, field)
                continue
            uid = str((ev.object.get("workload") or {}).get("uid") or "")
            st = m.states.get(uid)
            if field not in self.sigs[b]:
                new.append(uid)
            self._row(
                ops[b],
                b,
                ev.type,
                field,
                ev.object,
                st.facts if st is not None else None,
                f"{ev.resource[0]}|{ev.resource[1]}",
            )
        # A new workload's row goes out with its answer (a few ms later), so a reader who sees the
        # row can read the workload at once; every other row goes out now, answers after it.
        for uid in new:
            self.pending.pop(uid, None)
            await self._export(m, uid, ops)
        if n:
            await self._write(ops)
            ops = {b: Ops() for b in self.writers}
        for i, uid in enumerate(list(self.pending)[:EXPORT_BATCH]):
            if i and not sub.queue.empty():  # a row changed meanwhile: rows go first
                break
            del self.pending[uid]
            await self._export(m, uid, ops)
        if rv is not None and not self.pending and rv != self.written_rv:
            for o in ops.values():  # readers (and tests' read-your-writes) see how far the store is
                o.hset("meta", "resourceVersion", str(rv))
            self.written_rv = rv
        await self._write(ops)

    async def _capacity(self, m: LiveModel) -> None:
        """The inventory to the store when it changed, at most once per capacity.INTERVAL."""
        cap = m.capacity_inventory
        state = m.capacity_state()
        # the cluster's partial, not this shard's share: readers sum the buckets' shares
        partial = m.capacity_partial() if m.namespaces is not None else None
        self.capacity.head_moved(state, partial, cap.watching)
        if self.capacity.wait() != 0.0:
            return
        o = Ops()
        self.capacity.into(o, cap, state, partial, self.writers)
        await self.writers[self.primary].write(o)
        self.writes += 1

    async def _export(self, m: LiveModel, uid: str, ops: dict[int, Ops]) -> None:
        """A workload's answer into `ops`: the parts that differ from what the store holds."""
        obj_ = m.graph.by_uid.get(uid)
        held = None
        if obj_ is not None:
            b0 = self.bucket(obj_.namespace)
            if b0 in self.sigs:
                held = _held_rv(self.sigs[b0].get(keys.row_field(obj_.group, obj_.kind, obj_.namespace, obj_.name)))
        try:
            x = await m.export(uid, held)
        except Exception as e:
            if getattr(e, "status", None) == 503:
                self.pending[uid] = None  # no evaluation worker was free: later
            return
        if x is None:
            return
        g, k, ns, name = row_key(x.row)
        b = self.bucket(ns)
        if b not in self.writers:
            return
        field = keys.row_field(g, k, ns, name)
        now, sig, sets, dels = answers.plan(
            x, field, self.written[b].get(field), self.sigs[b].get(field), self._pods_held(b, field)
        )
        self.written[b][field] = now
        self.podlists[b].pop(field, None)
        if sig is None:
            return  # the store holds it so (as written, or as a previous owner left it)
        o = ops[b]
        if x.kept is not None:
            o.hset("obj", field, deflate(x.kept))
        for what, key, value in sets:
            o.hset(what, key, value)
        for what, key in dels:
            o.hdel(what, key)
        o.xadd("INTERPRETED", field)
        self.sigs[b][field] = sig

    def _pods_held(self, b: int, field: str) -> set[str]:
        """The pods whose parts the store holds for a workload (as written, or as a previous owner left them)."""
        was = self.written[b].get(field)
        if was is not None:
            return set(was.pods)
        listed = self.podlists[b].get(field)
        return {uid for _, uid in orjson.loads(listed)} if listed else set()


class Shard:
    def __init__(
        self,
        fleet: Fleet,
        redis: Any,
        claims: Claims,
        registry: Callable[[], Registry],
        interpret: Interpret,
        *,
        buckets: int = 1,
        maxlen: int = 100000,
        namespaces: list[str] | None = None,
        labelled: bool = False,
    ):
        self.fleet, self.redis, self.claims = fleet, redis, claims
        self.registry, self.interpret = registry, interpret
        self.buckets, self.maxlen, self.namespaces, self.labelled = buckets, maxlen, namespaces, labelled
        self.identity = claims.identity
        self.parts: dict[str, ClusterPart] = {}
        self._lock = asyncio.Lock()
        claims.on_change = self._changed
        self.started_at = time.time()

    def units(self) -> list[str]:
        return [u for name in sorted(self.fleet.members) for u in keys.units_of(name, self.buckets)]

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the claims' units equal to the fleet's clusters (they come and go with Secrets)."""
        claims_task = asyncio.create_task(self.claims.run(stop), name="shard-claims")
        try:
            while not stop.is_set():
                self.claims.set_units(self.units())
                await sleep_or_stop(stop, 1.0)
        finally:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await claims_task
            for p in list(self.parts.values()):
                await p.close()

    async def _changed(self, acquired: dict[str, int], released: set[str]) -> None:
        async with self._lock:
            touched = {keys.split_unit(u)[0] for u in [*acquired, *released]}
            for name in touched:
                owned = {
                    keys.split_unit(u)[1]: e for u, e in self.claims.owned.items() if keys.split_unit(u)[0] == name
                }
                part = self.parts.pop(name, None)
                if part is not None:
                    await part.close()
                member = self.fleet.get(name)
                if owned and member is not None:
                    log.info("cluster %s: this shard owns buckets %s", name, sorted(owned))
                    p = ClusterPart(self, member, owned)
                    self.parts[name] = p
                    p.start()

    def status(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "claims": self.claims.status(),
            "startedAt": now_iso(self.started_at),
            "clusters": {
                name: {
                    "buckets": sorted(p.epochs),
                    "synced": not p.need_resync,
                    "pendingAnswers": len(p.pending),
                    "writes": p.writes,
                    "model": p.model.status() if p.model is not None else None,
                }
                for name, p in sorted(self.parts.items())
            },
        }
