"""Which shard owns which unit (a cluster, or "cluster#bucket"), through Leases in the home cluster.

Every shard holds a Lease of its own (labelled with the group, renewed every `renew` s); a shard
whose Lease record has not changed for its duration, on OUR clock, is dead.  Every `retry` s a
shard lists the group's Leases, computes the same `assign`ment as every other shard from the
units and the live shards, and then:
- gives up (on_change first, then holderIdentity cleared) the units no longer assigned to it;
- takes the unit Leases assigned to it when they are free or expired, renews those it holds.
A unit it cannot renew for `deadline` (< lease_seconds) seconds is dropped by a watchdog before
its Lease can expire under it, so two shards never both believe they own a unit (the watchdog
tries one renewal first: a late one, after this process stalled, keeps the unit if it succeeds).  The fencing
epoch of a unit is its Lease's leaseTransitions after our acquire: it grows on every change of
holder, and unit Leases are never deleted, so it keeps growing across release and re-acquire.

Takeover: a clean stop releases every Lease and deletes the shard's own, so the others take its
units at their next look; a shard that dies is noticed once its Leases expire (≤ lease_seconds +
retry after its last renewal).

Why the Lease is short (6 s, renewed every 1.5 s; Kubernetes' leader election uses 15/10/2 s):
its duration is the floor of a takeover, and a short one is safe here for two reasons.  The
holder still drops a unit `deadline` (2/3 of the duration) after its last successful renewal,
before any rival can see the Lease expire (a rival's clock starts when it saw that renewal, later),
so while renewals can succeed two shards never both believe they own a unit.  And when that
fails too (a holder paused, its loop stalled, partitioned past its deadline), every write to the
store is fenced by the unit's epoch (writer.py): the new owner's claim raises the epoch in the
store first, and the old owner's writes are refused from then on.  A shorter Lease costs
renewals (one PUT per unit every `renew` s, one LIST every `retry` s) and a unit is given up and
synced again when the API server cannot renew it for `deadline` s; it never lets two owners
write a unit.  Dead shards' Leases are deleted (identities are per process, so
they would pile up); unit Leases of units that are gone stay, released, to keep their epochs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from app.cluster import lease
from app.cluster.kube import Kube, KubeError
from app.cluster.lease import LEASES, LeaseLock, Sightings, holder_of

log = logging.getLogger("wlmap.claims")

GROUP_LABEL = "workload-map.dev/claims"  # the group: shards of one deployment
KIND_LABEL = "workload-map.dev/lease"  # "shard" or "unit"
UNIT_ANNOTATION = "workload-map.dev/unit"  # the unit itself (the Lease name is sanitised and hashed)
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")

LEASE_SECONDS = 6  # a unit's Lease duration (why so short: the module's docstring)

OnChange = Callable[[dict[str, int], set[str]], Awaitable[None]]


def lease_name(group: str, kind: str, key: str) -> str:
    """A valid Lease name (a DNS subdomain, here ≤ 63 characters) for any text: a readable
    sanitised part plus a short hash of the text itself, so that two texts never share one."""

    def slug(s: str, n: int) -> str:
        return re.sub(r"[^a-z0-9]+", "-", s.lower())[:n].strip("-")

    digest = hashlib.blake2b(f"{group}\0{key}".encode(), digest_size=5).hexdigest()
    return "-".join(p for p in (slug(group, 16), kind, slug(key, 24), digest) if p)


def _score(unit: str, shard: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{unit}\0{shard}".encode(), digest_size=8).digest(), "big")


class Claims:
    """This shard's share of the units: a unit is a cluster name, or "cluster#bucket"."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        *,
        identity: str | None = None,
        lease_seconds: int = LEASE_SECONDS,
        renew: float | None = None,
        retry: float | None = None,
        group: str = "workload-map",
        deadline: float | None = None,
    ):
        if not _LABEL_VALUE.match(group):
            raise ValueError(f"claims group {group!r}: must be a valid label value")
        self.kube, self.namespace, self.group = kube, namespace, group
        self.identity = identity or lease.identity()
        self.lease_seconds = lease_seconds
        # renewed four times per duration, looked at six: a dead shard is seen ~1 s after its expiry
        self.renew = renew if renew is not None else lease_seconds / 4
        self.retry = retry if retry is not None else lease_seconds / 6
        # dropped this long after the last renewal: before any other shard can see the Lease expire
        self.deadline = deadline if deadline is not None else lease_seconds * 2 / 3
        if not 0 < self.deadline < lease_seconds:
            raise ValueError("claims deadline must be between 0 and lease_seconds")
        self.owned: dict[str, int] = {}  # unit -> fencing epoch
        self.changed = asyncio.Event()  # set whenever `owned` changes
        self.on_change: OnChange | None = None
        self.live: list[str] = []  # the live shards at the last look
        self.assignment: dict[str, str] = {}  # unit -> shard, as computed at the last look
        self._units: set[str] = set()
        self._wake = asyncio.Event()
        self._mutex = asyncio.Lock()  # `owned` and on_change: the loop and the watchdog take turns
        self._sightings = Sightings()
        self._said: set[str] = set()  # errors already logged (a lasting one is said once)
        self._erred = False  # an error in this look
        self._me = LeaseLock(
            kube,
            namespace,
            lease_name(group, "shard", self.identity),
            self.identity,
            lease_seconds=lease_seconds,
            sightings=self._sightings,
            labels={GROUP_LABEL: group, KIND_LABEL: "shard"},
        )
        self._locks: dict[str, LeaseLock] = {}  # unit -> its Lease, for the units assigned to us

    # -- the interface ----------------------------------------------------------------------
    def set_units(self, units: Iterable[str]) -> None:
        """The units that exist now; the loop looks again at once when they changed (callers may
        repeat the same set every second)."""
        new = set(units)
        if new != self._units:
            self._units = new
            self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim, renew and give up units until `stop`; on exit every Lease held is released."""
        watchdog = asyncio.create_task(self._watchdog(stop), name="claims-watchdog")
        try:
            while not stop.is_set():
                self._wake.clear()
                self._erred = False
                try:
                    await self._until_stop(self._look(), stop)
                except (TimeoutError, KubeError) as e:
                    self._say(str(e))
                if not self._erred:  # a clean look: an error that comes back is said again
                    self._said.clear()
                waits = [asyncio.ensure_future(e.wait()) for e in (stop, self._wake)]
                try:
                    await asyncio.wait(waits, timeout=self.retry, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
            await self.release()

    @staticmethod
    async def _until_stop(look: Awaitable[None], stop: asyncio.Event) -> None:
        """A look, cut short by `stop` (an API server that does not answer must not hold a SIGTERM)."""
        task = asyncio.ensure_future(look)
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([task, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if not task.cancelled():
            task.result()

    async def release(self) -> None:
        """Give every unit up (on_change first), release their Leases and delete our own shard
        Lease: the other shards take the units at their next look."""
        await self._drop(set(self.owned))
        # every unit Lease we may hold: a look cut short by the stop may have taken one unseen
        # (release reads it first and leaves it alone unless it names us)
        await asyncio.gather(*(lock.release() for lock in self._locks.values()))
        if self._me.held:
            self._me.held = False
            try:
                await self.kube.request("DELETE", LEASES.path(self.namespace, self._me.name), timeout=3)
            except (TimeoutError, KubeError) as e:
                log.warning(
                    "claims: could not delete shard Lease %s (%s); it expires in %d s",
                    self._me.name,
                    e,
                    self.lease_seconds,
                )

    def status(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "group": self.group,
            "live": list(self.live),
            "owned": dict(sorted(self.owned.items())),
            "assignment": dict(sorted(self.assignment.items())),
        }

    @staticmethod
    def assign(units: Iterable[str], shards: Iterable[str]) -> dict[str, str]:
        """Unit -> shard: every shard gets floor or ceil of units/shards, the same answer from the
        same inputs on every shard, and few units move when a shard comes or goes.

        Rendezvous hashing with bounded loads: every (unit, shard) pair has a score, and the
        pairs are taken best first while the shard has room: q = floor(U/N) units each, and
        the first r = U mod N shards to fill up may take one more.  The room adds up to U, so
        every unit is placed and every shard ends with q or q + 1."""
        us, ss = sorted(set(units)), sorted(set(shards))
        if not us or not ss:
            return {}
        q, r = divmod(len(us), len(ss))
        pairs = sorted(((_score(u, s), u, s) for u in us for s in ss), reverse=True)
        out: dict[str, str] = {}
        count = dict.fromkeys(ss, 0)
        extra = 0
        for _, u, s in pairs:
            if u in out:
                continue
            if count[s] < q or (count[s] == q and extra < r):
                extra += count[s] == q
                count[s] += 1
                out[u] = s
                if len(out) == len(us):
                    break
        return out

    # -- one look ---------------------------------------------------------------------------
    async def _look(self) -> None:
        listed = (await self.kube.list(LEASES, self.namespace, label_selector=f"{GROUP_LABEL}={self.group}"))["items"]
        # every Lease has a name (one without could be neither ours nor a unit's)
        by_name = {n: x for x in listed if (n := (x.get("metadata") or {}).get("name")) is not None}
        for x in listed:  # expiry is judged from when we saw each record change, whoever it is for
            self._sightings.see(x)
        self._sightings.keep_only(set(by_name))

        if self._due(self._me):
            await self._attempt(self._me.act(by_name.get(self._me.name)))
        live = set()
        for x in listed:
            if (x.get("metadata") or {}).get("labels", {}).get(KIND_LABEL) != "shard" or not holder_of(x):
                continue
            if not self._sightings.expired(x, self.lease_seconds):
                live.add(holder_of(x))
            elif self._sightings.unchanged_for(x) > 2 * self.lease_seconds:
                await self._attempt(self._delete_dead(x))
        live.discard(self.identity)  # we count only while our own Lease is renewed in time
        if self._me.held and time.monotonic() - self._me.renewed < self.deadline:
            live.add(self.identity)
        self.live = sorted(live)
        self.assignment = self.assign(self._units, live)
        mine = {u for u, s in self.assignment.items() if s == self.identity}

        # what is no longer ours: the caller stops using it before anyone else may take it
        gone = {u for u, lock in self._locks.items() if u not in mine}
        await self._drop(gone & set(self.owned))
        for unit in gone:
            old = self._locks.pop(unit)
            if old.held:
                await old.release()

        acquired: dict[str, int] = {}
        lost: set[str] = set()
        for unit in sorted(mine):
            lock = self._locks.get(unit)
            if lock is None:
                lock = self._locks[unit] = LeaseLock(
                    self.kube,
                    self.namespace,
                    lease_name(self.group, "unit", unit),
                    self.identity,
                    lease_seconds=self.lease_seconds,
                    sightings=self._sightings,
                    labels={GROUP_LABEL: self.group, KIND_LABEL: "unit"},
                    annotations={UNIT_ANNOTATION: unit},
                )
            current = by_name.get(lock.name)
            if unit in self.owned and not self._due(lock):
                if current is None or holder_of(current) != self.identity:
                    lock.held = False  # taken from us (our renewals failed for long) or deleted
                    lost.add(unit)
                continue
            held = await self._attempt(lock.act(current))
            if held and unit not in self.owned:
                acquired[unit] = lock.transitions
            elif held is False and unit in self.owned:
                lost.add(unit)
        await self._drop(lost)
        if acquired:
            async with self._mutex:
                self.owned.update(acquired)
                self.changed.set()
                for unit, epoch in acquired.items():
                    log.info("claims: %s owns %s (epoch %d)", self.identity, unit, epoch)
                await self._tell(acquired, set())

    def _due(self, lock: LeaseLock) -> bool:
        return not lock.held or time.monotonic() - lock.renewed >= self.renew

    async def _attempt(self, write: Awaitable[bool | None]) -> bool | None:
        """One write; an error (403 without RBAC, 5xx) is logged once and counts as not held."""
        try:
            return await write
        except (TimeoutError, KubeError) as e:
            self._say(str(e))
            return None

    async def _delete_dead(self, shard_lease: dict[str, Any]) -> None:
        meta = shard_lease.get("metadata") or {}
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"resourceVersion": meta.get("resourceVersion")},
        }
        try:
            await self.kube.request("DELETE", LEASES.path(self.namespace, meta.get("name")), body=body)
            log.info("claims: deleted the Lease of dead shard %s", holder_of(shard_lease))
        except KubeError as e:
            if e.status not in (404, 409):  # another shard deleted it first, or it came back
                raise

    # -- giving units up --------------------------------------------------------------------
    async def _drop(self, units: set[str]) -> None:
        units &= set(self.owned)
        if not units:
            return
        async with self._mutex:
            units &= set(self.owned)
            for unit in units:
                del self.owned[unit]
            if units:
                self.changed.set()
                log.info("claims: %s gives up %s", self.identity, ", ".join(sorted(units)))
                await self._tell({}, units)

    async def _watchdog(self, stop: asyncio.Event) -> None:
        """Drop a unit not renewed for `deadline` s, even while the loop waits on a slow API server."""
        while not stop.is_set():
            now = time.monotonic()
            locks = [(u, self._locks[u]) for u in self.owned if u in self._locks]
            late = {u for u, lock in locks if now - lock.renewed >= self.deadline}
            if late:
                late = await self._renew_late(late)
            if late:
                log.warning("claims: %s not renewed for %.1f s; dropped", ", ".join(sorted(late)), self.deadline)
                await self._drop(late)
            nxt = min((lock.renewed + self.deadline for u, lock in locks if u not in late), default=now + self.retry)
            await asyncio.sleep(max(0.05, min(nxt - now, self.retry)))

    async def _renew_late(self, late: set[str]) -> set[str]:
        """The late units this shard could not renew now.  A renewal is late when this process
        stalled (a big list projected under a loaded CPU) as much as when the API server does
        not answer; one that succeeds now proves that nobody took the unit meanwhile (a taker's
        write would have moved the Lease's resourceVersion, and ours would be refused)."""

        async def renew(unit: str) -> bool:
            lock = self._locks.get(unit)
            if lock is None or not lock.held:
                return False
            try:
                return await asyncio.wait_for(lock.look(), timeout=self.retry) is True
            except (TimeoutError, KubeError):
                return False

        units = sorted(late)
        kept = await asyncio.gather(*(renew(u) for u in units))
        return {u for u, ok in zip(units, kept, strict=True) if not ok}

    async def _tell(self, acquired: dict[str, int], released: set[str]) -> None:
        if self.on_change is None:
            return
        try:
            await self.on_change(acquired, released)
        except Exception:  # the caller's bug must not stop the claims (nor keep a unit forever)
            log.exception("claims: on_change failed")

    def _say(self, message: str) -> None:
        self._erred = True
        if message not in self._said:
            if len(self._said) > 100:
                self._said.clear()
            self._said.add(message)
            log.warning("claims: %s", message)
