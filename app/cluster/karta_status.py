"""Karta resources report their own state (`--manage-kartas true`).

The replica holding the Lease (lease.py) writes, for every Karta the Karta source watches:
its conditions (app/karta/conditions.py) through the /status subresource, its root
group/version/kind index labels with a merge patch, and an Event when its state changes.
Each write happens only when what the object says differs from what it should say, so the
watch event our own write causes finds nothing to do (no write loops), and every write carries
the resourceVersion it was computed from (a concurrent edit makes it a 409: recomputed from
the newer object on the next pass).

Passes run after each reload of the Karta source (debounced watch events) or of any other
definition source (a ConfigMap may shadow a Karta), when this replica becomes leader, and when
a CustomResourceDefinition comes or goes (a metadata-only CRD watch): then discovery forgets
that group, and its kinds are looked at again every second for a few seconds, because
discovery serves (or drops) a CRD's kind shortly after the CRD changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..karta import conditions as kc
from ..karta.store import DefinitionStore
from .informer import Informer, sleep_or_stop
from .kube import (
    CRDS,
    EVENTS,
    KARTAS,
    Forbidden,
    Kube,
    KubeError,
    NotFound,
    Unavailable,
)
from .lease import LeaderElector
from .sources import KartaSource

log = logging.getLogger("wlmap.kartas")

LEASE_NAME = "workload-map-karta-manager"
EVENT_NAMESPACE = "default"  # Events about cluster-scoped objects live there (as client-go records them)
MERGE = {"Content-Type": "application/merge-patch+json"}
RECHECK = 10.0  # seconds after a CRD event during which unserved kinds of its group are looked at again
RESYNC = 300.0  # a full pass now and then, whatever happened (a write lost to an outage)


@dataclass(frozen=True)
class _Crd:
    rv: str
    name: str


class KartaStatusManager:
    def __init__(
        self,
        kube: Kube,
        source: KartaSource,
        store: DefinitionStore,
        namespace: str,
        *,
        lease_name: str = LEASE_NAME,
        elector: LeaderElector | None = None,
    ):
        self.kube, self.source, self.store = kube, source, store
        self.elector = elector or LeaderElector(kube, namespace, lease_name)
        self.crds = Informer(
            kube,
            CRDS,
            lambda o: _Crd(
                str((o.get("metadata") or {}).get("resourceVersion") or ""),
                str((o.get("metadata") or {}).get("name") or ""),
            ),
            self._on_crd,
            metadata_only=True,
            name="karta-manager-crds",
        )
        self._dirty = asyncio.Event()
        self._crd_changed: dict[str, float] = {}  # group -> monotonic time of its last CRD event
        self._events_allowed = True
        self.writes = {"status": 0, "labels": 0, "events": 0}  # tests and logs read them
        self._task: asyncio.Task[None] | None = None
        self._lease_task: asyncio.Task[None] | None = None
        self._refused: str | None = None  # the last 403 logged (RBAC missing: said once, retried slowly)
        self._failed: dict[str, str] = {}  # Karta -> the refusal of its last write, logged once
        source.on_reload.append(self._dirty.set)  # Kartas changed (their status too)
        store.listeners.append(lambda _state: self._dirty.set())  # any source: what is in force may change

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, stop: asyncio.Event) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(stop), name="karta-manager")
        return self._task

    async def run(self, stop: asyncio.Event) -> None:
        self._lease_task = asyncio.create_task(self.elector.run(stop), name="karta-lease")
        tasks = [
            self._lease_task,
            asyncio.create_task(self.crds.run(stop), name="karta-manager-crds"),
            asyncio.create_task(self._loop(stop), name="karta-status"),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def close(self, timeout: float = 3.0) -> None:
        """After `stop` is set: wait (bounded) for the Lease to be released, then end the rest
        (the CRD watch would only notice `stop` at its next event)."""
        if self._lease_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._lease_task), timeout)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def status(self) -> dict[str, Any]:
        e = self.elector
        return {
            "lease": f"{e.namespace}/{e.name}",
            "holder": e.holder,
            "leading": e.leading,
            "writes": dict(self.writes),
        }

    def _on_crd(self, type_: str, key: Any, old: Any, new: Any) -> None:
        if not self.crds.synced_once.is_set():
            return  # the first list: nothing changed, discovery is asked anyway
        group = (new or old).name.partition(".")[2]
        self.kube.discovery.forget_group(group)
        self._crd_changed[group] = time.monotonic()
        self._dirty.set()

    async def _loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            waits = [asyncio.ensure_future(e.wait()) for e in (stop, self._dirty, self.elector.changed)]
            try:
                await asyncio.wait(waits, timeout=RESYNC, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            self._dirty.clear()
            self.elector.changed.clear()
            if stop.is_set() or not self.elector.leading or self.source.state != "synced":
                continue
            try:
                again = await self.reconcile()
                self._refused = None
            except Forbidden as e:
                if e.message != self._refused:
                    log.warning(
                        "not allowed to write Karta status (%s); grant what the chart's kartas.manage "
                        "grants. Trying again every 30 s",
                        e,
                    )
                    self._refused = e.message
                await sleep_or_stop(stop, 30.0)
                again = True
            except KubeError as e:
                log.warning("Karta status pass failed (%s); trying again", e)
                again = True
            except Exception:
                log.exception("Karta status pass failed; trying again")
                again = True
            if again:
                await sleep_or_stop(stop, 1.0)
                self._dirty.set()

    # -- one pass -------------------------------------------------------------------------
    async def reconcile(self) -> bool:
        """Bring every Karta's status, labels and Events up to date.  True: look again soon
        (a write lost a race, or a kind may be about to be served)."""
        objects = self.source.objects
        defs, unreadable = self.source.latest
        registry = self.store.registry
        claimed = kc.claims(objects)
        self._crd_changed = {g: t for g, t in self._crd_changed.items() if self._recent(g)}
        self._failed = {n: m for n, m in self._failed.items() if n in objects}
        served = await self._served(set(claimed))
        # a CRD of a Karta's group changed lately: discovery may not show it yet, look again soon
        again = any(self._recent(g[0]) for g in served)
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for name, obj in sorted(objects.items()):
            if not self.elector.leading:
                return False
            origin = kc.origin_of(name)
            want = kc.conditions(name, obj, defs.get(origin), unreadable.get(origin), served.get, registry, claimed)
            try:
                await self._write(name, obj, want, now)
                self._failed.pop(name, None)
            except NotFound:
                continue  # deleted meanwhile
            except (Forbidden, Unavailable):
                raise  # the whole pass is off: said once / retried by the loop
            except KubeError as e:
                if e.status == 409:
                    again = True  # changed meanwhile: computed again from the newer object
                elif self._failed.get(name) != e.message:  # refused (422...): said once, tried at its next change
                    log.warning("could not write the status of Karta %s: %s", name, e)
                    self._failed[name] = e.message
        return again

    async def _served(self, gvks: set[kc.GVK]) -> dict[kc.GVK, bool]:
        out: dict[kc.GVK, bool] = {}
        for gvk in gvks:
            if self._recent(gvk[0]):
                self.kube.discovery.forget(gvk[0], gvk[1])  # its CRD changed lately: ask, do not trust the cache
            out[gvk] = await self.kube.resource(gvk) is not None
        return out

    def _recent(self, group: str) -> bool:
        changed = self._crd_changed.get(group)
        return changed is not None and time.monotonic() - changed < RECHECK

    async def _write(self, name: str, obj: dict[str, Any], want: list[dict[str, str]], now: str) -> None:
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        old = ((obj.get("status") or {}).get("conditions")) or []
        old = old if isinstance(old, list) else []
        new = kc.merged(old, want, meta.get("generation"), now)
        if new != old:
            out = await self.kube.request(
                "PATCH",
                KARTAS.path(None, name) + "/status",
                headers=MERGE,
                body={"metadata": {"resourceVersion": rv}, "status": {"conditions": new}},
            )
            rv = str(((out or {}).get("metadata") or {}).get("resourceVersion") or rv)
            self.writes["status"] += 1
            before, after = kc.event_of(old), kc.event_of(new)
            if after is not None and (before is None or before[1] != after[1]):
                await self._event(name, meta, rv, after)
        labels = kc.labels(obj)
        current = meta.get("labels") or {}
        if any(current.get(k) != v for k, v in labels.items()):
            await self.kube.request(
                "PATCH",
                KARTAS.path(None, name),
                headers=MERGE,
                body={"metadata": {"resourceVersion": rv, "labels": labels}},
            )
            self.writes["labels"] += 1

    async def _event(self, name: str, meta: dict[str, Any], rv: str, event: tuple[str, str, str]) -> None:
        if not self._events_allowed:
            return
        type_, reason, message = event
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {
                "apiVersion": KARTAS.api_version,
                "kind": "Karta",
                "name": name,
                "uid": meta.get("uid"),
                "resourceVersion": rv,
            },
            "reason": reason,
            "message": message[:1024],
            "type": type_,
            "source": {"component": "workload-map"},
            "reportingComponent": "workload-map",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await self.kube.request("POST", EVENTS.path(EVENT_NAMESPACE), body=body)
            self.writes["events"] += 1
        except Forbidden:
            self._events_allowed = False
            log.info(
                "not allowed to create Events in %s; Karta state changes are in their status only", EVENT_NAMESPACE
            )
        except KubeError as e:
            log.warning("could not post an Event for Karta %s: %s", name, e)
