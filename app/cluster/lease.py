"""Leases of `coordination.k8s.io/v1`, held the way client-go's leaderelection holds them.

`LeaseLock` is one Lease: created, taken when it is free (holderIdentity empty: the holder
released it on SIGTERM) or expired, renewed, released.  Expiry is judged on this process's own
clock (`Sightings`): a Lease counts as expired when its record has not changed for
`leaseDurationSeconds` since *we* last saw it change, so clocks that disagree between nodes do
not matter.  Every write carries the resourceVersion we read (optimistic concurrency): of two
processes racing for a free Lease, one gets 409 and does not hold it.

`LeaderElector` is leader election with one LeaseLock: the leader renews every `renew` seconds,
the others look every `retry` seconds.  A leader that cannot renew for `deadline` seconds steps
down before its Lease can expire under it, so two replicas never both believe they lead.
(app/store/claims.py holds many LeaseLocks the same way: one per claimed unit.)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import secrets
import socket
import time
from typing import Any

from .informer import sleep_or_stop
from .kube import Kube, KubeError, NotFound, Resource

log = logging.getLogger("wlmap.lease")

LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases", True)


def identity() -> str:
    """The pod's name (its hostname in Kubernetes) plus a random suffix: two processes of one pod
    (uvicorn workers) or a restarted pod never share an identity."""
    host = os.environ.get("POD_NAME") or socket.gethostname() or "workload-map"
    return f"{host}_{secrets.token_hex(4)}"


def _micro_time(t: float | None = None) -> str:
    return dt.datetime.fromtimestamp(time.time() if t is None else t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def holder_of(lease: dict[str, Any]) -> str:
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


class Sightings:
    """When each Lease's record (holder, renewTime, resourceVersion) last changed, on our own
    monotonic clock."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, float]] = {}

    def see(self, lease: dict[str, Any]) -> float:
        """Record a read of the Lease; the monotonic time its record last changed as we saw it."""
        spec = lease.get("spec") or {}
        meta = lease.get("metadata") or {}
        record = f"{spec.get('holderIdentity') or ''}|{spec.get('renewTime')}|{meta.get('resourceVersion')}"
        name = str(meta.get("name"))
        seen = self._seen.get(name)
        if seen is None or seen[0] != record:
            self._seen[name] = seen = (record, time.monotonic())
        return seen[1]

    def unchanged_for(self, lease: dict[str, Any]) -> float:
        return time.monotonic() - self.see(lease)

    def expired(self, lease: dict[str, Any], default_seconds: float) -> bool:
        duration = float((lease.get("spec") or {}).get("leaseDurationSeconds") or default_seconds)
        return self.unchanged_for(lease) >= duration

    def keep_only(self, names: set[str]) -> None:
        """Forget Leases that are gone (the map stays as big as the Leases listed)."""
        for name in set(self._seen) - names:
            del self._seen[name]


class LeaseLock:
    """One Lease as `holder` sees it.  `act` is one step on it as last read; `release` gives it up."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        holder: str,
        *,
        lease_seconds: int = 15,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        sightings: Sightings | None = None,
    ):
        self.kube, self.namespace, self.name, self.holder = kube, namespace, name, holder
        self.lease_seconds = lease_seconds
        self.labels, self.annotations = labels or {}, annotations or {}
        self.sightings = sightings or Sightings()
        self.held = False  # our last write succeeded and nobody has been seen holding it since
        self.renewed = 0.0  # monotonic time just before our last successful acquire or renew
        self.transitions = 0  # the Lease's leaseTransitions as we last wrote it (a fencing epoch)

    async def look(self) -> bool | None:
        """Read the Lease and `act` on it."""
        try:
            lease = await self.kube.get(LEASES, self.namespace, self.name)
        except NotFound:
            lease = None
        return await self.act(lease)

    async def act(self, lease: dict[str, Any] | None) -> bool | None:
        """One step on the Lease as last read (None: it does not exist): create it, renew it if it
        is ours, take it if it is free or expired.  True: we hold it now; False: somebody else
        does (or took it from us: we hold it no more); None: our write lost a race (409)."""
        now, started = _micro_time(), time.monotonic()
        if lease is None:
            transitions = 0
            meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
            if self.labels:
                meta["labels"] = self.labels
            if self.annotations:
                meta["annotations"] = self.annotations
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": meta,
                "spec": {
                    "holderIdentity": self.holder,
                    "leaseDurationSeconds": self.lease_seconds,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            }
            method, path = "POST", LEASES.path(self.namespace)
        else:
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            expired = self.sightings.expired(lease, self.lease_seconds)
            transitions = int(spec.get("leaseTransitions") or 0)
            if holder == self.holder:
                spec["renewTime"] = now
            else:
                if self.held:  # somebody else holds it now: we lost it (our renewals failed for long)
                    self.held = False
                    return False
                if holder and not expired:
                    return False  # held, and renewed within its duration as far as we can tell
                transitions += 1  # every change of holder, a takeover or after a release
                spec.update(
                    holderIdentity=self.holder,
                    leaseDurationSeconds=self.lease_seconds,
                    acquireTime=now,
                    renewTime=now,
                    leaseTransitions=transitions,
                )
            lease["spec"] = spec  # metadata.resourceVersion stays: a concurrent writer makes this a 409
            body, method, path = lease, "PUT", LEASES.path(self.namespace, self.name)
        try:
            await self.kube.request(method, path, body=body)
        except KubeError as e:
            if e.status == 409:  # another process wrote first
                return None
            raise
        self.held, self.renewed, self.transitions = True, started, transitions
        return True

    async def release(self) -> None:
        """Give the Lease up at once (holderIdentity cleared): another process takes it at its
        next look, not after it expires."""
        self.held = False
        try:
            lease = await self.kube.request("GET", LEASES.path(self.namespace, self.name), timeout=3)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.holder:
                return
            spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro_time())
            lease["spec"] = spec
            await self.kube.request("PUT", LEASES.path(self.namespace, self.name), body=lease, timeout=3)
            log.info("lease %s/%s released by %s", self.namespace, self.name, self.holder)
        except NotFound:
            return  # never created: nothing to give up
        except (TimeoutError, KubeError) as e:
            log.warning(
                "lease %s/%s: could not release (%s); it expires in %d s",
                self.namespace,
                self.name,
                e,
                self.lease_seconds,
            )


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        *,
        holder: str | None = None,
        lease_seconds: int = 15,
        renew: float = 5.0,
        retry: float = 2.0,
        deadline: float = 10.0,
    ):
        self.kube, self.namespace, self.name = kube, namespace, name
        self.holder = holder or identity()
        self.lease_seconds, self.renew, self.retry, self.deadline = lease_seconds, renew, retry, deadline
        self.lock = LeaseLock(kube, namespace, name, self.holder, lease_seconds=lease_seconds)
        self.leading = False
        self.changed = asyncio.Event()  # set whenever `leading` flips (the manager waits on it)
        self.transitions = 0  # times this replica became leader (tests and logs)

    # -- the loop -------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        said = ""  # the last error logged: a lasting one (no RBAC for the Lease) is said once
        try:
            while not stop.is_set():
                try:
                    await self._try()
                    said = ""
                except KubeError as e:
                    if str(e) != said:
                        log.warning("lease %s/%s: %s", self.namespace, self.name, e)
                        said = str(e)
                if self.leading and time.monotonic() - self.lock.renewed > self.deadline:
                    log.warning(
                        "lease %s/%s: not renewed for %.0f s; stepping down", self.namespace, self.name, self.deadline
                    )
                    self._set(False)
                await sleep_or_stop(stop, self.renew if self.leading else self.retry)
        finally:
            await self.release()

    async def release(self) -> None:
        """Give the Lease up at once (on SIGTERM): another replica takes it at its next look,
        not after the lease expires."""
        if not self.leading:
            return
        self._set(False)
        await self.lock.release()

    # -- one look -------------------------------------------------------------------------
    async def _try(self) -> None:
        held = await self.lock.look()
        if held:
            if not self.leading:
                self.transitions += 1
                log.info("lease %s/%s acquired by %s", self.namespace, self.name, self.holder)
                self._set(True)
        elif held is False and self.leading:
            self._set(False)

    def _set(self, leading: bool) -> None:
        if leading != self.leading:
            self.leading = leading
            self.changed.set()
