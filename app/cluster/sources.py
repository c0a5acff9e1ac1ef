"""Definitions from the cluster, hot-reloaded: ConfigMaps and Karta custom resources.

Each source runs one loop: list (remember the resourceVersion), then watch from it.  A watch
the server ends normally is resumed from the last version seen; 410 Gone means the version
is compacted away, so we list again; a broken connection or an unreachable server is retried
with jittered exponential backoff.  Bursts of events are debounced into one reload.  Every
reload hands the source's complete current contents to the `DefinitionStore`, which keeps the
last good version of each definition and lets deletions fall back to lower sources.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
from typing import Any

from ..documents import DocumentError
from ..karta.load import Definition, NotAKarta, definition_from_document, definitions_from_text
from ..karta.store import CLUSTER, CONFIGMAP, DefinitionStore
from .kube import CONFIGMAPS, EVENTS, KARTAS, Forbidden, Gone, Kube, KubeError, NotFound

log = logging.getLogger("wlmap.sources")

DEFAULT_SELECTOR = "workload-map.dev/definitions"


class Backoff:
    """Exponential with full jitter: 0.25 s doubling to `cap`."""

    def __init__(self, base: float = 0.25, cap: float = 8.0):
        self.base, self.cap, self.attempt = base, cap, 0

    def reset(self) -> None:
        self.attempt = 0

    def next(self) -> float:
        delay = min(self.cap, self.base * 2 ** self.attempt)
        self.attempt += 1
        return random.uniform(delay / 2, delay)


class WatchedSource:
    """List + watch one kind of object; subclasses turn the current objects into definitions."""

    key = ""
    resource = CONFIGMAPS
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def __init__(self, kube: Kube, store: DefinitionStore, debounce: float = 0.2, watch_timeout: int = 240):
        self.kube, self.store, self.debounce = kube, store, debounce
        self.watch_timeout = watch_timeout
        self.objects: dict[str, dict[str, Any]] = {}  # name -> object, as last seen
        self.resource_version: str | None = None
        self.relists = 0  # tests and metrics read these
        self.reconnects = 0
        self.state = "starting"  # starting | synced | unavailable | forbidden | not-served
        self.error: str | None = None
        self._dirty = asyncio.Event()

    # -- the loop -------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        flusher = asyncio.create_task(self._flush_loop(stop))
        backoff, forbidden = Backoff(), Backoff(base=1.0, cap=30.0)
        need_list = True
        try:
            while not stop.is_set():
                try:
                    if need_list:
                        await self._list()
                        need_list = False
                    await self._watch(stop)  # returns when the server ends the watch: resume from our version
                    backoff.reset()
                    forbidden.reset()
                except Gone:
                    log.info("%s: resourceVersion %s is too old; listing again", self.key, self.resource_version)
                    need_list = True
                except NotFound:
                    need_list = True
                    await self._not_served()
                    await _sleep(stop, 10.0)  # wait for the CRD to be installed
                except Forbidden as e:
                    # RBAC may be fixed any time, and a restarting API server briefly denies
                    # everything until its authorizer has synced: retry soon, then less often
                    # (resuming the watch if the list was done: our state is still valid).
                    self._set_state("forbidden", str(e))
                    await _sleep(stop, forbidden.next())
                except KubeError as e:
                    # Server restarting or connection dropped: resume the watch from the last version
                    # seen (the server answers 410 if it cannot, and we list again then).
                    self.reconnects += 1
                    self._set_state("unavailable", str(e))
                    await _sleep(stop, backoff.next())
                except Exception as e:  # never let a bug end the loop: the last good definitions stay
                    log.exception("%s: unexpected error in the watch loop", self.key)
                    need_list = True
                    self._set_state("unavailable", f"{type(e).__name__}: {e}")
                    await _sleep(stop, backoff.next())
        finally:
            flusher.cancel()

    async def _list(self) -> None:
        lst = await self.kube.list(self.resource, self.namespace, label_selector=self.label_selector,
                                   field_selector=self.field_selector)
        self.relists += 1
        self.objects = {o["metadata"]["name"]: o for o in lst["items"]}
        self.resource_version = lst["metadata"]["resourceVersion"]
        self._set_state("synced", None)
        await self._apply()  # at once: readiness waits for this first sync

    async def _watch(self, stop: asyncio.Event) -> None:
        # Jitter the server-side timeout so many replicas do not re-watch in step.
        timeout = self.watch_timeout + random.randint(0, self.watch_timeout // 4)
        events = self.kube.watch(self.resource, self.namespace, resource_version=self.resource_version,
                                 label_selector=self.label_selector, field_selector=self.field_selector,
                                 timeout_seconds=timeout, on_connected=lambda: self._set_state("synced", None))
        async with contextlib.aclosing(events):  # the HTTP stream is released however we leave
            async for ev in events:
                obj = ev.get("object") or {}
                meta = obj.get("metadata") or {}
                self.resource_version = meta.get("resourceVersion") or self.resource_version
                kind = ev.get("type")
                if kind in ("ADDED", "MODIFIED"):
                    self.objects[meta["name"]] = obj
                    self._dirty.set()
                elif kind == "DELETED":
                    self.objects.pop(meta.get("name"), None)
                    self._dirty.set()
                if stop.is_set():
                    return

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(self.debounce)  # a burst of edits becomes one reload
            self._dirty.clear()
            try:
                await self._apply()
            except Exception:
                log.exception("%s: reload failed; the previous definitions stay in service", self.key)

    async def _not_served(self) -> None:
        self.objects = {}
        self._set_state("not-served", f"{self.resource.plural}.{self.resource.group or 'core'} is not served")
        await self._apply()

    def _set_state(self, state: str, error: str | None) -> None:
        if state != self.state or error != self.error:
            if error:
                log.warning("%s: %s", self.key, error)
            self.state, self.error = state, error

    async def _apply(self) -> None:
        loaded, unreadable = self.definitions()
        state = self.store.replace(self.key, loaded, unreadable)
        await self.report(state.rejected, unreadable)

    # -- per source -----------------------------------------------------------------------
    def definitions(self) -> tuple[list[Definition], dict[str, str]]:
        raise NotImplementedError

    async def report(self, rejected: list[Definition], unreadable: dict[str, str]) -> None:
        pass


class ConfigMapSource(WatchedSource):
    """ConfigMaps of one namespace, by name or label selector; each data key holds one or more
    definitions (a YAML stream or JSON)."""

    key = CONFIGMAP
    resource = CONFIGMAPS

    def __init__(self, kube: Kube, store: DefinitionStore, namespace: str, *, name: str | None = None,
                 selector: str | None = None, **kw: Any):
        super().__init__(kube, store, **kw)
        self.namespace = namespace
        self.field_selector = f"metadata.name={name}" if name else None
        self.label_selector = None if name else (selector or DEFAULT_SELECTOR)
        self._reported: dict[str, str] = {}  # origin -> message already posted as an Event
        self._events_allowed = True

    def origin(self, cm: str, key: str) -> str:
        return f"configmap:{self.namespace}/{cm}/{key}"

    def definitions(self) -> tuple[list[Definition], dict[str, str]]:
        loaded: list[Definition] = []
        unreadable: dict[str, str] = {}
        for name in sorted(self.objects):
            for key, text in sorted((self.objects[name].get("data") or {}).items()):
                origin = self.origin(name, key)
                try:
                    loaded += definitions_from_text(text, "configmap", origin, skip_other_kinds=False)
                except (DocumentError, NotAKarta) as e:
                    unreadable[origin] = str(e)
        return loaded, unreadable

    async def report(self, rejected: list[Definition], unreadable: dict[str, str]) -> None:
        """A Warning Event on the ConfigMap for each new problem, when RBAC allows it."""
        problems: dict[str, str] = dict(unreadable)
        for d in rejected:
            first = next((f.message for f in d.findings if f.level == "error"), "invalid")
            problems[d.origin.split("#")[0]] = f"definition {d.name or '?'} is invalid: {first}"
        new = {o: m for o, m in problems.items() if self._reported.get(o) != m}
        self._reported = problems
        if not self._events_allowed:
            return
        for origin, message in new.items():
            cm_name, key = origin.split("/", 2)[1:]
            cm = self.objects.get(cm_name)
            if cm is None:
                continue
            kept = "; the last good version stays in service"
            try:
                await self.kube.request("POST", EVENTS.path(self.namespace), body=_event(cm, key, message + kept))
            except Forbidden:
                self._events_allowed = False
                log.info("not allowed to create Events in %s; definition problems are reported in the log, "
                         "on GET /definitions and in metrics only", self.namespace)
                return
            except KubeError as e:
                log.warning("could not post an Event for %s: %s", origin, e)


class KartaSource(WatchedSource):
    """Cluster-scoped Karta custom resources (`kartas.run.ai`), when that CRD is served."""

    key = CLUSTER
    resource = KARTAS

    def definitions(self) -> tuple[list[Definition], dict[str, str]]:
        return karta_definitions(self.objects)


def karta_definitions(objects: dict[str, dict[str, Any]]) -> tuple[list[Definition], dict[str, str]]:
    """Karta resources as definitions (server-set metadata and status dropped)."""
    loaded: list[Definition] = []
    unreadable: dict[str, str] = {}
    for name in sorted(objects):
        obj = objects[name]
        meta = obj.get("metadata") or {}
        doc = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
               "metadata": {k: meta[k] for k in ("name", "labels", "annotations") if k in meta},
               "spec": obj.get("spec")}
        try:
            loaded.append(definition_from_document(doc, "cluster", f"karta:{name}"))
        except NotAKarta as e:
            unreadable[f"karta:{name}"] = str(e)
    return loaded, unreadable


def _event(cm: dict[str, Any], key: str, message: str) -> dict[str, Any]:
    meta = cm["metadata"]
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"],
                           "namespace": meta["namespace"], "uid": meta.get("uid"),
                           "resourceVersion": meta.get("resourceVersion"), "fieldPath": f"data[{key}]"},
        "reason": "InvalidDefinition", "message": message[:1024], "type": "Warning",
        "source": {"component": "workload-map"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "reportingComponent": "workload-map",
    }


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except asyncio.TimeoutError:
        pass
