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
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..documents import DocumentError
from ..karta.conditions import origin_of
from ..karta.load import (
    Definition,
    NotAKarta,
    definition_from_document,
    definitions_from_text,
)
from ..karta.store import CLUSTER, CONFIGMAP, DefinitionStore
from .informer import Informer
from .kube import CONFIGMAPS, EVENTS, KARTAS, Forbidden, Kube, KubeError

log = logging.getLogger("wlmap.sources")

DEFAULT_SELECTOR = "workload-map.dev/definitions"


@dataclass(frozen=True)
class _Doc:
    """A source object as the informer keeps it: the whole object (definitions are in it)."""

    rv: str
    obj: dict[str, Any]


class WatchedSource:
    """List + watch one kind of object (an `Informer`); subclasses turn the current objects into
    definitions.  A list is applied at once (readiness waits for the first); watch events are
    debounced, so a burst of edits becomes one reload."""

    key = ""
    resource = CONFIGMAPS
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def __init__(self, kube: Kube, store: DefinitionStore, debounce: float = 0.2, watch_timeout: int = 240):
        self.kube, self.store, self.debounce = kube, store, debounce
        self.watch_timeout = watch_timeout
        self._dirty = asyncio.Event()
        self.informer: Informer | None = None

    def _make_informer(self) -> Informer:
        def keep(obj: dict[str, Any]) -> _Doc:
            return _Doc(str((obj.get("metadata") or {}).get("resourceVersion") or ""), obj)

        return Informer(
            self.kube,
            self.resource,
            keep,
            lambda *_: self._dirty.set(),
            namespace=self.namespace,
            watch_timeout=self.watch_timeout,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            on_list=self._listed,
            name=self.key,
            not_served_retry=10.0,
        )  # nobody pokes a source when its CRD is installed

    # -- what the service and tests read ----------------------------------------------------
    @property
    def objects(self) -> dict[str, dict[str, Any]]:
        """name -> object, as last seen."""
        inf = self.informer
        return {name: d.obj for (_, name), d in inf.objects.items()} if inf else {}

    @property
    def state(self) -> str:
        return self.informer.state if self.informer else "starting"

    @property
    def error(self) -> str | None:
        return self.informer.error if self.informer else None

    @property
    def resource_version(self) -> str | None:
        return self.informer.resource_version if self.informer else None

    @property
    def relists(self) -> int:
        return self.informer.relists if self.informer else 0

    @property
    def reconnects(self) -> int:
        return self.informer.reconnects if self.informer else 0

    # -- the loop -------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        self.informer = self.informer or self._make_informer()
        flusher = asyncio.create_task(self._flush_loop(stop))
        try:
            await self.informer.run(stop)
        finally:
            flusher.cancel()

    async def _listed(self) -> None:
        self._dirty.clear()
        await self._apply()  # at once: readiness waits for this first sync

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(self.debounce)  # a burst of edits becomes one reload
            self._dirty.clear()
            try:
                await self._apply()
            except Exception:
                log.exception("%s: reload failed; the previous definitions stay in service", self.key)

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

    def __init__(
        self,
        kube: Kube,
        store: DefinitionStore,
        namespace: str,
        *,
        name: str | None = None,
        selector: str | None = None,
        **kw: Any,
    ):
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
                log.info(
                    "not allowed to create Events in %s; definition problems are reported in the log, "
                    "on GET /definitions and in metrics only",
                    self.namespace,
                )
                return
            except KubeError as e:
                log.warning("could not post an Event for %s: %s", origin, e)


class KartaSource(WatchedSource):
    """Cluster-scoped Karta custom resources (`kartas.run.ai`), when that CRD is served."""

    key = CLUSTER
    resource = KARTAS

    def __init__(self, kube: Kube, store: DefinitionStore, **kw: Any):
        super().__init__(kube, store, **kw)
        self.latest: tuple[dict[str, Definition], dict[str, str]] = ({}, {})  # last load, by origin
        self.on_reload: list[Callable[[], None]] = []  # after each reload (the Karta status writer)
        self._loaded: dict[str, dict[str, Any]] | None = None  # the documents of the last load

    async def _apply(self) -> None:
        docs = {name: karta_document(obj) for name, obj in self.objects.items()}
        if docs == self._loaded:  # only status or server-set fields changed (a status write): no reload
            await self.report([], {})
            return
        self._loaded = docs
        await super()._apply()

    def definitions(self) -> tuple[list[Definition], dict[str, str]]:
        loaded, unreadable = karta_definitions(self.objects)
        self.latest = ({d.origin: d for d in loaded}, dict(unreadable))
        return loaded, unreadable

    async def report(self, rejected: list[Definition], unreadable: dict[str, str]) -> None:
        for fn in self.on_reload:
            fn()


def karta_definitions(objects: dict[str, dict[str, Any]]) -> tuple[list[Definition], dict[str, str]]:
    """Karta resources as definitions (server-set metadata and status dropped)."""
    loaded: list[Definition] = []
    unreadable: dict[str, str] = {}
    for name in sorted(objects):
        try:
            loaded.append(definition_from_document(karta_document(objects[name]), "cluster", origin_of(name)))
        except NotAKarta as e:
            unreadable[origin_of(name)] = str(e)
    return loaded, unreadable


def karta_document(obj: dict[str, Any]) -> dict[str, Any]:
    """What of a Karta resource makes its definition: no status, no server-set metadata."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "labels", "annotations") if k in meta},
        "spec": obj.get("spec"),
    }


def _event(cm: dict[str, Any], key: str, message: str) -> dict[str, Any]:
    meta = cm["metadata"]
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "fieldPath": f"data[{key}]",
        },
        "reason": "InvalidDefinition",
        "message": message[:1024],
        "type": "Warning",
        "source": {"component": "workload-map"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": "workload-map",
    }
