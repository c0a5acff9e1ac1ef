"""One cluster of the fleet: its connection, live model, direct reads, access checks and health.

Each member runs on its own: it connects (retrying with backoff when its kubeconfig cannot be
loaded), starts its model, and probes its API server (`GET /version`) every few seconds.  The
probe is what "available" means: a member whose server stops answering is marked down within
one probe interval, its model keeps what it holds (answers are marked as not watching), and it
resyncs by itself when the server is back.  Nothing a member does waits on another member.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ..cluster.access import Access
from ..cluster.informer import Backoff, cancel_all, sleep_or_stop
from ..cluster.kube import Kube, KubeError
from ..cluster.workloads import Interpret, Workloads, now_iso
from ..karta.registry import Registry
from ..model.events import EventLog
from ..model.listed import ListedCapacity
from ..model.live import LiveModel
from ..model.protocol import ClusterModel
from . import secret_kubeconfig
from .specs import ClusterSpec, redact

log = logging.getLogger("wlmap.fleet")


class Member:
    def __init__(
        self,
        spec: ClusterSpec,
        *,
        registry: Callable[[], Registry],
        interpret: Interpret,
        events: EventLog,
        cache: bool = True,
        namespaces: list[str] | None = None,
        auth: bool = False,
        labelled: bool = True,
        kube: Kube | None = None,
        probe_interval: float = 10.0,
        request_timeout: float = 30.0,
        model_factory: Callable[[Member], ClusterModel] | None = None,
    ):
        self.spec, self.name = spec, spec.name
        self.registry, self.interpret, self.events = registry, interpret, events
        self.cache, self.namespaces, self.auth, self.labelled = cache, namespaces, auth, labelled
        self.probe_interval, self.request_timeout = probe_interval, request_timeout
        # Behind a store (app/store): the cluster as the store holds it, in place of a live model
        self.model_factory = model_factory
        self.kube = kube
        self._owns_kube = kube is None
        self.model: ClusterModel | None = None  # None: --cache false (every read is direct)
        self.listed: ListedCapacity | None = None  # --cache false: capacity from one list
        self.workloads: Workloads | None = None
        self.access: Access | None = None
        self.version: str | None = None
        self.reachable = False  # the last probe got an answer
        self.last_error: str | None = None  # safe to show: credentials are redacted
        self.checked_at: float | None = None  # wall time of the last probe
        self.since = time.time()  # when `reachable` last changed
        self.invalid: str | None = None  # a newer spec of this cluster that could not be used (kept the old)
        self._server: str | None = None  # the kubeconfig's server URL, while not connected
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        if kube is not None:
            self._attach(kube)

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, stop: asyncio.Event) -> None:
        async def follow() -> None:  # the service stopping stops every member
            await stop.wait()
            self._stop.set()

        self._tasks.append(asyncio.create_task(follow(), name=f"member-{self.name}-stop"))
        self._tasks.append(asyncio.create_task(self._run(), name=f"member-{self.name}"))

    async def close(self) -> None:
        self._stop.set()
        if self.model is not None:
            await self.model.close()
        await cancel_all(self._tasks)
        if self.kube is not None and self._owns_kube:
            with contextlib.suppress(Exception):
                await self.kube.close()

    def _attach(self, kube: Kube) -> None:
        self.kube = kube
        self.workloads = Workloads(kube, self.registry, self.interpret, cluster=self.name if self.labelled else None)
        self.access = Access(kube) if self.auth else None
        self.listed = None if self.cache else ListedCapacity(kube, self.namespaces)
        if self.model_factory is not None:
            self.model = self.model_factory(self)
        elif self.cache:
            self.model = LiveModel(
                kube,
                self.registry,
                self.interpret,
                namespaces=self.namespaces,
                cluster=self.name if self.labelled else None,
                events=self.events,
            )

    async def _run(self) -> None:
        backoff = Backoff(base=1.0, cap=30.0)
        while self.kube is None and not self._stop.is_set():
            try:
                self._attach(await self._connect())
            except Exception as e:
                self._set(False, f"cannot load the kubeconfig: {redact(str(e) or type(e).__name__, self.spec)}")
                await sleep_or_stop(self._stop, backoff.next())
        if self._stop.is_set():
            return
        if self.model is not None:
            self.model.start(self._stop)
        while not self._stop.is_set():
            await self._probe()
            # a cluster that is down is probed at least every 2 s: it shows as back promptly
            await sleep_or_stop(self._stop, self.probe_interval if self.reachable else min(self.probe_interval, 2.0))

    async def _connect(self) -> Kube:
        s = self.spec
        if s.inline is not None:  # a Secret's: built from its validated fields, never by the kubeconfig loader
            return await secret_kubeconfig.connect(s.inline, request_timeout=self.request_timeout)
        return await Kube.connect(s.kubeconfig, s.context, request_timeout=self.request_timeout)

    async def _probe(self) -> None:
        assert self.kube is not None
        try:
            doc = await self.kube.request("GET", "/version", timeout=min(5.0, self.request_timeout))
            self.version = str((doc or {}).get("gitVersion") or "") or self.version
            self._set(True, None)
        except KubeError as e:
            self._set(False, redact(e.message, self.spec))
        except Exception as e:
            self._set(False, redact(f"{type(e).__name__}: {e}", self.spec))
        self.checked_at = time.time()

    def _set(self, reachable: bool, error: str | None) -> None:
        if reachable != self.reachable:
            self.since = time.time()
            if reachable:
                log.info("cluster %s: reachable (%s)", self.name, self.version or "?")
                if self.model is not None and self.checked_at is not None:  # back after an outage
                    self.model.reconnect_now()
            else:
                log.warning("cluster %s: unreachable: %s", self.name, error)
        self.reachable, self.last_error = reachable, error

    # -- what readers ask -------------------------------------------------------------------
    @property
    def available(self) -> bool:
        return self.reachable

    @property
    def synced(self) -> bool:
        return self.model.synced if self.model is not None else self.reachable

    def rows(self) -> list[dict[str, Any]]:
        return [row for row, _ in self.model.rows()] if self.model is not None else []

    def status(self) -> dict[str, Any]:
        """The /clusters item: no credential, only what the kubeconfig says of the server."""
        by_phase: dict[str, dict[str, float]] = {}
        gpus = 0.0
        accelerators: dict[str, int] = {}
        rows = self.rows()
        for r in rows:
            g = float(r.get("gpus") or 0)
            gpus += g
            for res, n in (r.get("accelerators") or {}).items():
                accelerators[res] = accelerators.get(res, 0) + n
            p = by_phase.setdefault(str(r.get("phase") or "Unknown"), {"workloads": 0, "gpus": 0})
            p["workloads"] += 1
            p["gpus"] += g
        server: str | None
        if self.kube is not None:
            server = self.kube.host
        else:  # not connected: what its kubeconfig names, read once (the status is asked every second)
            if self._server is None:
                self._server = self.spec.server() or ""
            server = self._server or None
        error = self.last_error
        if error is None and self.invalid:
            error = self.invalid
        if error is None and self.model is not None:
            error = self.model.error()
        return {
            "name": self.name,
            "server": server,
            "version": self.version,
            "synced": self.synced,
            "available": self.available,
            "lastError": error,
            "workloads": len(rows),
            "gpus": _num(gpus),
            "accelerators": dict(sorted(accelerators.items())),
            "phases": {
                p: {"workloads": int(v["workloads"]), "gpus": _num(v["gpus"])} for p, v in sorted(by_phase.items())
            },
            "origin": self.spec.origin,
            "source": self.spec.source or None,
            "context": self.spec.context,
            "checkedAt": now_iso(self.checked_at) if self.checked_at else None,
            "since": now_iso(self.since),
        }


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else round(v, 3)
