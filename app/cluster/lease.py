"""Leader election with a `coordination.k8s.io/v1` Lease, the way client-go's leaderelection does.

One replica holds the Lease and renews it every `renew` seconds; the others look at it every
`retry` seconds and take it when it is free (holderIdentity empty: the holder released it on
SIGTERM) or expired.  Expiry is judged on this replica's own clock: the Lease counts as expired
when its record has not changed for `leaseDurationSeconds` since *we* last saw it change, so
clocks that disagree between nodes do not matter.  Every write carries the resourceVersion we
read (optimistic concurrency): of two replicas racing for a free Lease, one gets 409 and stays
a follower.  A leader that cannot renew for `deadline` seconds steps down before its Lease can
expire under it, so two replicas never both believe they lead.
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
    return dt.datetime.fromtimestamp(time.time() if t is None else t, dt.UTC) \
        .strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: Kube, namespace: str, name: str, *, holder: str | None = None,
                 lease_seconds: int = 15, renew: float = 5.0, retry: float = 2.0, deadline: float = 10.0):
        self.kube, self.namespace, self.name = kube, namespace, name
        self.holder = holder or identity()
        self.lease_seconds, self.renew, self.retry, self.deadline = lease_seconds, renew, retry, deadline
        self.leading = False
        self.changed = asyncio.Event()  # set whenever `leading` flips (the manager waits on it)
        self.transitions = 0  # times this replica became leader (tests and logs)
        self._observed: tuple[str, float] = ("", 0.0)  # (the Lease record we last saw, when it changed)
        self._renewed = 0.0  # monotonic time of our last successful acquire or renew

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
                if self.leading and time.monotonic() - self._renewed > self.deadline:
                    log.warning("lease %s/%s: not renewed for %.0f s; stepping down", self.namespace, self.name,
                                self.deadline)
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
        try:
            lease = await self.kube.get(LEASES, self.namespace, self.name)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.holder:
                return
            spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro_time())
            lease["spec"] = spec
            await self.kube.request("PUT", LEASES.path(self.namespace, self.name), body=lease, timeout=3)
            log.info("lease %s/%s released by %s", self.namespace, self.name, self.holder)
        except (TimeoutError, KubeError) as e:
            log.warning("lease %s/%s: could not release (%s); it expires in %d s", self.namespace, self.name, e,
                        self.lease_seconds)

    # -- one look -------------------------------------------------------------------------
    async def _try(self) -> None:
        now = _micro_time()
        try:
            lease = await self.kube.get(LEASES, self.namespace, self.name)
        except NotFound:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.holder, "leaseDurationSeconds": self.lease_seconds,
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
            if await self._write("POST", LEASES.path(self.namespace), body):
                self._won()
            return
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = f"{holder}|{spec.get('renewTime')}|{(lease.get('metadata') or {}).get('resourceVersion')}"
        if record != self._observed[0]:
            self._observed = (record, time.monotonic())
        if holder == self.holder:
            spec["renewTime"] = now
        else:
            if self.leading:  # somebody else holds it now: we lost it (our renewals failed for long)
                self._set(False)
            duration = float(spec.get("leaseDurationSeconds") or self.lease_seconds)
            if holder and time.monotonic() - self._observed[1] < duration:
                return  # held, and renewed within its duration as far as we can tell
            spec.update(holderIdentity=self.holder, leaseDurationSeconds=self.lease_seconds, acquireTime=now,
                        renewTime=now, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        lease["spec"] = spec  # metadata.resourceVersion stays: a concurrent writer makes this a 409
        if await self._write("PUT", LEASES.path(self.namespace, self.name), lease):
            self._won()

    async def _write(self, method: str, path: str, body: dict[str, Any]) -> bool:
        try:
            await self.kube.request(method, path, body=body)
            return True
        except KubeError as e:
            if e.status == 409:  # another replica wrote first
                return False
            raise

    def _won(self) -> None:
        self._renewed = time.monotonic()
        if not self.leading:
            self.transitions += 1
            log.info("lease %s/%s acquired by %s", self.namespace, self.name, self.holder)
            self._set(True)

    def _set(self, leading: bool) -> None:
        if leading != self.leading:
            self.leading = leading
            self.changed.set()
